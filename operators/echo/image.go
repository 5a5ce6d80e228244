package echo

import (
	"errors"
	"regexp"
	"strings"
)

// imageRE is the grammar of an image reference, [HOST[:PORT]/]PATH[:TAG][@DIGEST],
// as distribution/reference (which kubelets and containerd parse with)
// writes it; copied, not imported, for one regular expression.
var imageRE = func() *regexp.Regexp {
	const (
		component = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
		domain    = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host      = `(?:` + domain + `(?:\.` + domain + `)*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?`
		name      = `(?:` + host + `/)?` + component + `(?:/` + component + `)*`
		tag       = `[\w][\w.-]{0,127}`
		digest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}`
	)
	return regexp.MustCompile(`^(` + name + `)(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

// CheckImage says what is wrong with image as an image reference, or nil;
// eg is an image that would do. The apiserver takes any string that has no
// surrounding spaces, and kwok's fake nodes "run" it, so a mistyped image
// would pass on envtest and fail only on real nodes.
func CheckImage(image, eg string) error {
	switch m := imageRE.FindStringSubmatch(image); {
	case image == "":
		return errors.New("want an image, e.g. " + eg)
	case m == nil && strings.ContainsFunc(image, func(r rune) bool { return r <= ' ' }):
		return errors.New("want an image with no spaces, e.g. " + eg)
	case m == nil:
		return errors.New("want an image reference, [HOST[:PORT]/]NAME[:TAG][@DIGEST] with a lower-case NAME, e.g. " + eg)
	case len(m[1]) > 255:
		return errors.New("want an image whose name is at most 255 characters")
	}
	return nil
}
