package assets

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Fetching installs prebuilt binaries into the cache in the layout the build
// script writes (BIN and BIN.stamp), from the official releases or from a
// classroom mirror (`rlab assets serve`). Each binary is downloaded to a
// temporary name in the cache directory, checked against its published
// sha256, and only then renamed into place: nothing half-written is ever
// found there, and a fetch that stops half-way leaves whole binaries that the
// next fetch keeps (it fetches only what is still missing).

// Timeouts bound every wait on the network, so that a machine with no network
// (or a server that hangs) hears so in seconds.
type Timeouts struct {
	Connect time.Duration // dialing, DNS included, and the TLS handshake
	Header  time.Duration // from a request sent to its response's headers
	Stall   time.Duration // a body that sends no byte for this long
}

// DefaultTimeouts are what rlab waits in production.
var DefaultTimeouts = Timeouts{Connect: 5 * time.Second, Header: 15 * time.Second, Stall: 20 * time.Second}

// maxDownload caps one download (the largest, kube-apiserver, is about 100 MB).
const maxDownload = 1 << 30

// FetchOptions says what to fetch from where.
type FetchOptions struct {
	Dir      string   // where to install: OwnDir, or PlatformDir for another platform
	Platform Platform // default Host()
	Names    []string // default Binaries
	// From is a classroom mirror's URL (`rlab assets serve`); "" fetches the
	// official releases from Upstream.
	From     string
	Upstream Upstream // default Official
	Timeouts Timeouts // default DefaultTimeouts
	Progress io.Writer
	// Parallel downloads at once; default 3.
	Parallel int
	// Replace are binaries to fetch even though they are there (stale
	// builds: see Get).
	Replace []string
	// GitHubToken, if set, is sent to GitHub's API (for its rate limit:
	// 60 requests an hour to an address without one).
	GitHubToken string
}

// Fetched says what a fetch did.
type Fetched struct {
	Dir       string
	Installed []FetchedFile // in Names order
	Present   []string      // up to date already, not fetched
	Elapsed   time.Duration
}

// FetchedFile is one binary installed.
type FetchedFile struct {
	Name    string
	Bytes   int64 // downloaded (the archive, for etcd)
	SHA256  string
	Elapsed time.Duration
}

// Bytes is what the fetch downloaded in all.
func (f *Fetched) Bytes() int64 {
	var n int64
	for _, x := range f.Installed {
		n += x.Bytes
	}
	return n
}

// UnreachableError: the source did not answer at all (no network, no such
// host, refused, or no answer within the timeouts). Nothing was installed.
type UnreachableError struct {
	What string // "the official release downloads", "the mirror http://…"
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s cannot be reached: %v", e.What, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// ChecksumError: a download did not match its published sha256 (corrupt, or
// cut short). It was not installed.
type ChecksumError struct {
	Name      string // the binary
	URL       string // what was downloaded
	SumFrom   string // where the published sha256 came from
	Want, Got string // published, and of what arrived
	// Arrived and Expected are byte counts; Expected is -1 when the server
	// did not say.
	Arrived, Expected int64
	Err               error // why the download ended early, if it did
}

func (e *ChecksumError) Error() string {
	cut := ""
	switch {
	case e.Err != nil:
		cut = fmt.Sprintf(", cut short after %s (%v)", MB(e.Arrived), e.Err)
	case e.Expected >= 0 && e.Arrived != e.Expected:
		cut = fmt.Sprintf(", %s of the %s expected", MB(e.Arrived), MB(e.Expected))
	}
	return fmt.Sprintf("%s refused, not installed: the download's sha256 is %s but %s publishes %s (%s%s)",
		e.Name, e.Got, e.SumFrom, e.Want, e.URL, cut)
}

func (e *ChecksumError) Unwrap() error { return e.Err }

// StatusError: the server answered a request with an error status (a 404:
// nothing released for that platform).
type StatusError struct {
	URL    string
	Status string
	Code   int
	Hint   string // what to do, when known
}

func (e *StatusError) Error() string {
	if e.Hint != "" {
		return fmt.Sprintf("GET %s: %s: %s", e.URL, e.Status, e.Hint)
	}
	return fmt.Sprintf("GET %s: %s", e.URL, e.Status)
}

// Fetch installs the binaries of o.Names that are not already up to date in
// o.Dir. Each binary is got on its own: one that cannot be had (no release
// for the platform, no checksum published, a download refused) is an error
// of its own, joined with the others', and the rest are installed. When the
// source cannot be reached at all, the error is one *UnreachableError. What
// was installed stays installed (each file whole) and Fetched lists it; the
// caller may build the rest.
func Fetch(ctx context.Context, o FetchOptions) (*Fetched, error) {
	start := time.Now()
	if o.Platform == "" {
		o.Platform = Host()
	}
	if len(o.Names) == 0 {
		o.Names = Binaries
	}
	if o.Upstream == (Upstream{}) {
		o.Upstream = Official
	}
	if o.Timeouts == (Timeouts{}) {
		o.Timeouts = DefaultTimeouts
	}
	if o.Parallel <= 0 {
		o.Parallel = 3
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	f := &fetcher{o: o, client: newClient(o.Timeouts), out: &lockedWriter{w: o.Progress}}
	defer f.client.CloseIdleConnections()
	res := &Fetched{Dir: o.Dir}

	what := "the release downloads"
	var arts []artifact
	var err error
	if o.From != "" {
		what = "the mirror " + o.From
		arts, err = f.mirrorArtifacts(ctx)
	} else {
		arts, err = o.Upstream.releaseArtifacts(o.Platform, o.Names)
	}
	if err != nil {
		return res, f.classify(what, err)
	}
	todo := f.missing(arts, nil)
	if len(todo) == 0 {
		res.Present = o.Names
		res.Elapsed = time.Since(start)
		return res, nil
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return res, err
	}
	unlock, err := lockDir(ctx, o.Dir, f.out)
	if err != nil {
		return res, err
	}
	defer unlock()
	removeTemps(o.Dir)
	todo = f.missing(arts, &res.Present) // another rlab may have fetched them meanwhile

	// The published sums first: small requests, and their answers (or
	// none) say whether the source is there at all.
	sums := map[string]string{}
	var ready []artifact
	var errs []error
	unreachable := 0
	for _, a := range todo {
		s, err := f.sum(ctx, a.Sum)
		if err != nil {
			err = f.classify(what, err)
			var un *UnreachableError
			if errors.As(err, &un) {
				unreachable++
				if unreachable == len(todo) {
					return res, err // nothing answered: one line says so
				}
			}
			errs = append(errs, fmt.Errorf("%s for %s: its published sha256 (%s): %w", a.Name, o.Platform, a.Sum, err))
			continue
		}
		sums[a.Name] = s
		ready = append(ready, a)
	}
	if len(ready) > 0 {
		fmt.Fprintf(f.out, "fetching %d of %d binaries for %s from %s into %s\n", len(ready), len(arts), o.Platform, f.from(), o.Dir)
	}
	for _, a := range ready {
		if a.Unofficial {
			fmt.Fprintf(f.out, "  %s: Kubernetes releases no %s for %s; taking kwokctl's, from kwok-ci/k8s (not the Kubernetes project's)\n", a.Name, a.Name, o.Platform)
		}
	}

	done := make([]*FetchedFile, len(ready))
	derrs := make([]error, len(ready))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, a := range ready {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				derrs[i] = ctx.Err()
				return
			}
			done[i], derrs[i] = f.install(ctx, a, sums[a.Name])
		})
	}
	wg.Wait()
	for _, d := range done {
		if d != nil {
			res.Installed = append(res.Installed, *d)
		}
	}
	res.Elapsed = time.Since(start)
	return res, errors.Join(append(errs, derrs...)...)
}

// missing are the artifacts not up to date in the directory; the others'
// names are added to present, if given.
func (f *fetcher) missing(arts []artifact, present *[]string) []artifact {
	var out []artifact
	for _, a := range arts {
		if f.upToDate(a) {
			if present != nil {
				*present = append(*present, a.Name)
			}
		} else {
			out = append(out, a)
		}
	}
	return out
}

type fetcher struct {
	o      FetchOptions
	client *http.Client
	out    io.Writer

	mu     sync.Mutex
	bodies map[string][]byte // sum lists and API answers, fetched once
	stamps map[string]Stamp  // a mirror's stamps, by binary
	down   map[string]error  // hosts that did not answer: not asked again
}

func (f *fetcher) from() string {
	if f.o.From != "" {
		return f.o.From
	}
	return "the official releases"
}

// classify turns the first failed request into an UnreachableError when the
// source did not answer at all.
func (f *fetcher) classify(what string, err error) error {
	var un *UnreachableError
	if errors.As(err, &un) {
		return err
	}
	var se *StatusError
	if errors.As(err, &se) || errors.Is(err, context.Canceled) {
		return err
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &ne) || errors.As(err, &oe) || errors.As(err, &de) || errors.Is(err, syscall.ECONNREFUSED) {
		return &UnreachableError{What: what, Err: err}
	}
	return err
}

// upToDate: the binary is there, for this platform, and if it came from a
// release, from this one. Binaries built here or unpacked are the build
// script's to judge, and are kept.
func (f *fetcher) upToDate(a artifact) bool {
	if slices.Contains(f.o.Replace, a.Name) {
		return false
	}
	path := filepath.Join(f.o.Dir, a.Name)
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return false
	}
	s, err := ReadStamp(path)
	if err != nil || s.Platform != f.o.Platform {
		return false
	}
	if s.Origin == OriginRelease && f.o.From == "" {
		return s.Recipe == releaseStamp(f.o.Platform, a.Version).Recipe
	}
	return true
}

// get performs a GET and returns the response of a 200, or a *StatusError.
// The caller closes the body.
func (f *fetcher) get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	down := f.down[req.URL.Host]
	f.mu.Unlock()
	if down != nil {
		return nil, down
	}
	req.Header.Set("User-Agent", "rlab-assets")
	api := f.o.From == "" && strings.HasPrefix(url, strings.TrimSuffix(f.o.Upstream.GitHubAPI, "/")+"/")
	if api {
		req.Header.Set("Accept", "application/vnd.github+json")
		if f.o.GitHubToken != "" {
			req.Header.Set("Authorization", "Bearer "+f.o.GitHubToken)
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() == nil && f.classify("", err) != err {
			f.mu.Lock()
			if f.down == nil {
				f.down = map[string]error{}
			}
			f.down[req.URL.Host] = err
			f.mu.Unlock()
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		se := &StatusError{URL: url, Status: resp.Status, Code: resp.StatusCode}
		if api && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) && resp.Header.Get("X-RateLimit-Remaining") == "0" {
			se.Hint = "GitHub's API answers 60 requests an hour to an address without a token (a classroom shares one): set GITHUB_TOKEN, or fetch from a classroom mirror"
		}
		return nil, se
	}
	return resp, nil
}

// small fetches a small body (a sum, a list, an API answer), once per URL.
func (f *fetcher) small(ctx context.Context, url string) ([]byte, error) {
	f.mu.Lock()
	b, ok := f.bodies[url]
	f.mu.Unlock()
	if ok {
		return b, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeouts.Connect+f.o.Timeouts.Header+f.o.Timeouts.Stall)
	defer cancel()
	resp, err := f.get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	f.mu.Lock()
	if f.bodies == nil {
		f.bodies = map[string][]byte{}
	}
	f.bodies[url] = b
	f.mu.Unlock()
	return b, nil
}

// sum reads an artifact's published sha256.
func (f *fetcher) sum(ctx context.Context, s sumSource) (string, error) {
	switch {
	case s.Fixed != "":
		return s.Fixed, nil
	case s.File != "":
		b, err := f.small(ctx, s.File)
		if err != nil {
			return "", err
		}
		return hexSum(strings.Fields(string(b)), s.File)
	case s.List != "":
		b, err := f.small(ctx, s.List)
		if err != nil {
			return "", err
		}
		for line := range strings.Lines(string(b)) {
			fs := strings.Fields(line)
			if len(fs) == 2 && strings.TrimPrefix(fs[1], "*") == s.Entry {
				return hexSum(fs, s.List)
			}
		}
		return "", fmt.Errorf("%s lists no %s", s.List, s.Entry)
	case s.GitHub != "":
		b, err := f.small(ctx, s.GitHub)
		if err != nil {
			return "", err
		}
		var rel struct {
			Assets []struct {
				Name   string `json:"name"`
				Digest string `json:"digest"`
			} `json:"assets"`
		}
		if err := json.Unmarshal(b, &rel); err != nil {
			return "", fmt.Errorf("%s: %w", s.GitHub, err)
		}
		for _, a := range rel.Assets {
			if a.Name == s.Entry {
				d, ok := strings.CutPrefix(a.Digest, "sha256:")
				if !ok {
					return "", fmt.Errorf("%s publishes no sha256 digest for %s (%q)", s.GitHub, s.Entry, a.Digest)
				}
				return hexSum([]string{d}, s.GitHub)
			}
		}
		return "", fmt.Errorf("%s has no asset %s", s.GitHub, s.Entry)
	}
	return "", errors.New("no checksum source")
}

func hexSum(fields []string, from string) (string, error) {
	if len(fields) == 0 {
		return "", fmt.Errorf("%s is empty", from)
	}
	s := strings.ToLower(fields[0])
	if b, err := hex.DecodeString(s); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%s does not start with a sha256: %q", from, fields[0])
	}
	return s, nil
}

// install downloads a, checks it against want, and renames the binary into
// place with its stamp.
func (f *fetcher) install(ctx context.Context, a artifact, want string) (*FetchedFile, error) {
	start := time.Now()
	tmp, err := os.CreateTemp(f.o.Dir, "."+a.Name+".fetch-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	n, got, expected, dlErr := f.download(ctx, a, tmp)
	if cerr := tmp.Close(); dlErr == nil && cerr != nil {
		return nil, cerr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var se *StatusError
	if errors.As(dlErr, &se) {
		return nil, fmt.Errorf("%s: %w", a.Name, se)
	}
	var pe *os.PathError
	if errors.As(dlErr, &pe) {
		return nil, fmt.Errorf("%s: writing %s: %w", a.Name, tmp.Name(), dlErr) // the disk's fault, not the download's
	}
	if dlErr != nil || got != want {
		if n == 0 && dlErr != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, dlErr)
		}
		return nil, &ChecksumError{Name: a.Name, URL: a.URL, SumFrom: a.Sum.String(), Want: want, Got: got,
			Arrived: n, Expected: expected, Err: dlErr}
	}
	bin := tmp.Name()
	if a.Member != "" {
		bin, err = f.extract(tmp.Name(), a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		defer os.Remove(bin)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		return nil, err
	}
	dst := filepath.Join(f.o.Dir, a.Name)
	// The old stamp goes first: a binary with no stamp is one the build
	// script judges stale, never one that looks like what it replaced.
	if err := os.Remove(dst + ".stamp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.Rename(bin, dst); err != nil {
		return nil, err
	}
	if err := writeStamp(dst, f.stampFor(a)); err != nil {
		return nil, err
	}
	el := time.Since(start)
	fmt.Fprintf(f.out, "  %-24s %9s in %5.1fs (%s), sha256 %s… checked\n", a.Name, MB(n), el.Seconds(), rate(n, el), want[:12])
	return &FetchedFile{Name: a.Name, Bytes: n, SHA256: want, Elapsed: el}, nil
}

// download writes a's bytes to w, saying how it goes every 2 s, and returns
// how many arrived, their sha256, how many the server announced (-1: not
// said) and why it stopped early, if it did.
func (f *fetcher) download(ctx context.Context, a artifact, w io.Writer) (n int64, sum string, expected int64, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	expected = -1
	h := sha256.New()
	resp, err := f.get(ctx, a.URL)
	if err != nil {
		return 0, hex.EncodeToString(h.Sum(nil)), expected, err
	}
	defer resp.Body.Close()
	expected = resp.ContentLength
	stall := f.o.Timeouts.Stall
	errStalled := fmt.Errorf("no byte for %s", stall)
	timer := time.AfterFunc(stall, func() { cancel(errStalled) })
	defer timer.Stop()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	start := time.Now()
	buf := make([]byte, 256<<10)
	body := io.LimitReader(resp.Body, maxDownload)
	for {
		m, rerr := body.Read(buf)
		if m > 0 {
			timer.Reset(stall)
			h.Write(buf[:m])
			if _, werr := w.Write(buf[:m]); werr != nil {
				return n, hex.EncodeToString(h.Sum(nil)), expected, werr
			}
			n += int64(m)
		}
		select {
		case <-tick.C:
			of := ""
			if expected > 0 {
				of = " of " + MB(expected)
			}
			fmt.Fprintf(f.out, "  %-24s %9s%s, %s\n", a.Name, MB(n), of, rate(n, time.Since(start)))
		default:
		}
		if rerr == io.EOF {
			return n, hex.EncodeToString(h.Sum(nil)), expected, nil
		}
		if rerr != nil {
			if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
				rerr = c
			}
			return n, hex.EncodeToString(h.Sum(nil)), expected, rerr
		}
	}
}

// extract copies a.Member out of the downloaded archive into a temporary file
// in the cache directory and returns its name.
func (f *fetcher) extract(archive string, a artifact) (string, error) {
	out, err := os.CreateTemp(f.o.Dir, "."+a.Name+".fetch-*")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		out.Close()
		if !ok {
			os.Remove(out.Name())
		}
	}()
	found := false
	if strings.HasSuffix(a.URL, ".zip") {
		zr, err := zip.OpenReader(archive)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", a.URL, err)
		}
		defer zr.Close()
		for _, zf := range zr.File {
			if zf.Name != a.Member {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				return "", err
			}
			_, err = io.Copy(out, io.LimitReader(rc, maxDownload))
			rc.Close()
			if err != nil {
				return "", err
			}
			found = true
			break
		}
	} else {
		in, err := os.Open(archive)
		if err != nil {
			return "", err
		}
		defer in.Close()
		gz, err := gzip.NewReader(bufio.NewReader(in))
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", a.URL, err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", a.URL, err)
			}
			if h.Name != a.Member || h.Typeflag != tar.TypeReg {
				continue
			}
			if _, err := io.Copy(out, io.LimitReader(tr, maxDownload)); err != nil {
				return "", err
			}
			found = true
			break
		}
	}
	if !found {
		return "", fmt.Errorf("%s has no %s", a.URL, a.Member)
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	ok = true
	return out.Name(), nil
}

func (f *fetcher) stampFor(a artifact) Stamp {
	if f.o.From != "" {
		f.mu.Lock()
		s := f.stamps[a.Name]
		f.mu.Unlock()
		return s
	}
	return releaseStamp(f.o.Platform, a.Version)
}

// removeTemps deletes what a killed fetch left (its lock is held).
func removeTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*.fetch-*"))
	stamps, _ := filepath.Glob(filepath.Join(dir, "*.stamp.tmp"))
	for _, t := range append(tmps, stamps...) {
		_ = os.Remove(t)
	}
}

// lockDir holds an exclusive lock on dir's .fetch.lock until unlock: two
// rlabs fetching into one cache take turns.
func lockDir(ctx context.Context, dir string, out io.Writer) (unlock func(), err error) {
	lf, err := os.OpenFile(filepath.Join(dir, ".fetch.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN); lf.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			lf.Close()
			return nil, fmt.Errorf("locking %s: %w", lf.Name(), err)
		}
		if !said {
			fmt.Fprintf(out, "another rlab is fetching into %s; waiting for it\n", dir)
			said = true
		}
		select {
		case <-ctx.Done():
			lf.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func newClient(t Timeouts) *http.Client {
	d := &net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   t.Connect,
		ResponseHeaderTimeout: t.Header,
		MaxIdleConnsPerHost:   8,
		ForceAttemptHTTP2:     true,
	}}
}

// rate formats bytes over a duration, e.g. "41.2 MB/s".
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MB/s", float64(n)/1e6/d.Seconds())
}

// lockedWriter serializes progress lines from parallel downloads.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
