package ship

import (
	"bufio"
	"encoding/json"
	"io"
	"net/url"
	"time"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/proxy"
)

// SourcePrefix starts the source of the api.request events read from the
// audit log: "audit/mine/a". A shipped operator's requests reach the
// apiserver without a proxy of rlab's; the apiserver's own record says
// what they were.
const SourcePrefix = "audit/"

// auditEvent is what rlab reads of an audit.k8s.io/v1 Event (level
// Metadata).
type auditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	SourceIPs []string `json:"sourceIPs"`
	UserAgent string   `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	Completed       time.Time `json:"stageTimestamp"`
}

// FollowAudit reads audit lines from r until it ends and publishes, as an
// api.request event, each completed request of user (the operator's
// ServiceAccount, "system:serviceaccount:NS:NAME") that came from a pod of
// the Deployment, attributed to that pod's slot. Other lines are skipped.
func (p *Pods) FollowAudit(r io.Reader, user string, publish func(trace.Event)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var a auditEvent
		if json.Unmarshal(sc.Bytes(), &a) != nil || a.User.Username != user || a.Stage != "ResponseComplete" {
			continue
		}
		// The same ServiceAccount may act from elsewhere (the operator's
		// replicas on this machine, before it was shipped): only a pod of
		// the Deployment counts.
		if len(a.SourceIPs) == 0 {
			continue
		}
		slotName := p.SlotOf(a.SourceIPs[0])
		if slotName == "" {
			continue
		}
		publish(a.event(SourcePrefix + p.st.Source(slotName)))
	}
	return sc.Err()
}

// event is a as the proxy would have traced the same request.
func (a auditEvent) event(source string) trace.Event {
	q := trace.Request{Verb: a.Verb, UserAgent: a.UserAgent,
		LatencyMS: float64(a.Completed.Sub(a.RequestReceived).Microseconds()) / 1000}
	if a.ResponseStatus != nil {
		q.Code = a.ResponseStatus.Code
	}
	var ns, object string
	if o := a.ObjectRef; o != nil && o.Resource != "" {
		q.Resource, ns = o.Resource, o.Namespace
		if o.Subresource != "" {
			q.Resource += "/" + o.Subresource
		}
		if o.Name != "" {
			object = proxy.KindOf(o.Resource) + "/" + o.Name
		}
	} else {
		path := a.RequestURI
		if u, err := url.Parse(a.RequestURI); err == nil {
			path = u.Path
		}
		q.Resource = proxy.NonResource(path)
	}
	return q.Event(a.Completed, source, ns, object)
}
