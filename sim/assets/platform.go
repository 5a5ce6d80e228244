package assets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// KwokVersion is the kwok version scripts/controlplane pins.
const KwokVersion = "v0.8.0"

// Platform is a GOOS/GOARCH pair, e.g. "linux/amd64".
type Platform string

// Host is the platform rlab runs on.
func Host() Platform { return Platform(runtime.GOOS + "/" + runtime.GOARCH) }

// Supported are the platforms rlab and its control plane are built for: the
// sandbox needs Unix process groups, so no Windows.
var Supported = []Platform{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// OS is the GOOS half.
func (p Platform) OS() string { os, _, _ := strings.Cut(string(p), "/"); return os }

// Arch is the GOARCH half.
func (p Platform) Arch() string { _, arch, _ := strings.Cut(string(p), "/"); return arch }

// Slug is the platform as a file name: "linux-amd64".
func (p Platform) Slug() string { return p.OS() + "-" + p.Arch() }

// ParsePlatforms parses a comma-separated list ("linux/amd64,darwin/arm64"),
// dropping repeats and keeping the order; every platform must be Supported.
func ParsePlatforms(list string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.Split(list, ",") {
		p := Platform(strings.TrimSpace(f))
		if p == "" {
			continue
		}
		if !slices.Contains(Supported, p) {
			return nil, fmt.Errorf("unsupported platform %q: rlab is built for %s", p, joinPlatforms(Supported))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform in %q: want e.g. linux/amd64,darwin/arm64", list)
	}
	return out, nil
}

func joinPlatforms(ps []Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// OwnDir is Dir without $KUBEBUILDER_ASSETS: the directory rlab builds and
// installs its own binaries into ($RLAB_ASSETS or the per-user cache). A
// KUBEBUILDER_ASSETS directory belongs to someone else.
func OwnDir(env Env) string {
	dir, _ := Dir(func(k string) string {
		if k == "KUBEBUILDER_ASSETS" {
			return ""
		}
		return env(k)
	})
	return dir
}

// PlatformDir is where the control plane for p is built: OwnDir for the host,
// and beside it, suffixed with the platform, for any other (so a cross-build
// never touches the host's binaries): ~/.cache/rlab/controlplane/v1.36.3 and
// ~/.cache/rlab/controlplane/v1.36.3-darwin-arm64. The build script chooses
// the same directories when run by hand.
func PlatformDir(env Env, p Platform) string {
	if p == Host() {
		return OwnDir(env)
	}
	return OwnDir(env) + "-" + p.Slug()
}

// BinDir is where `rlab assets unpack` puts the rlab binary by default:
// $XDG_CACHE_HOME/rlab/bin (default ~/.cache/rlab/bin).
func BinDir(env Env) string {
	cache := env("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(env("HOME"), ".cache")
	}
	return filepath.Join(cache, "rlab", "bin")
}

// A Stamp is what scripts/build-controlplane.sh writes beside each binary
// (BIN.stamp), one line: "RECIPE PLATFORM GOVERSION ORIGIN".
//
// The rule, kept by the script (which alone knows the current recipe):
// a binary is up to date when RECIPE (a hash of go.mod, go.sum and the build
// recipe: versions, packages, flags) and PLATFORM match, and either
// GOVERSION is the Go doing the check or ORIGIN is "pack". ORIGIN is "build"
// for a binary built on this machine and "pack" for one installed by
// `rlab assets unpack`: that binary was built by the instructor's Go and its
// sha256 was checked against the archive's manifest, so a different local Go
// (or none at all) is no reason to rebuild it; a changed recipe still is.
// ORIGIN "mirror" is kept as "pack" is; ORIGIN "release" (see OriginRelease)
// is up to date while its recipe names the version the script pins.
//
// Find and Ensure need no Go and no recipe: they take a binary that is present
// and executable, and refuse only one whose stamp names another platform.
type Stamp struct {
	Recipe   string
	Platform Platform
	Go       string
	Origin   string
}

// Stamp origins.
const (
	OriginBuild = "build"
	OriginPack  = "pack"
	// OriginRelease: fetched from the official release, checked against its
	// published sha256; the stamp's recipe is "release-VERSION" and its Go
	// "-", and it is up to date while VERSION is the one rlab pins.
	OriginRelease = "release"
	// OriginMirror: fetched from a classroom mirror (`rlab assets serve`),
	// checked against the mirror's index; kept like a packed one.
	OriginMirror = "mirror"
)

func (s Stamp) String() string {
	return fmt.Sprintf("%s %s %s %s", s.Recipe, s.Platform, s.Go, s.Origin)
}

// errNoStamp: the binary has no stamp in the current form.
var errNoStamp = errors.New("no stamp")

// ParseStamp parses a stamp line; a stamp in another form (older scripts
// wrote only the hash) is an error.
func ParseStamp(line string) (Stamp, error) {
	f := strings.Fields(line)
	if len(f) != 4 || !strings.Contains(f[1], "/") {
		return Stamp{}, fmt.Errorf("%w in the current form: %q", errNoStamp, strings.TrimSpace(line))
	}
	return Stamp{Recipe: f[0], Platform: Platform(f[1]), Go: f[2], Origin: f[3]}, nil
}

// ReadStamp reads the stamp of the binary at path (path + ".stamp").
func ReadStamp(path string) (Stamp, error) {
	b, err := os.ReadFile(path + ".stamp")
	if err != nil {
		return Stamp{}, err
	}
	s, err := ParseStamp(string(b))
	if err != nil {
		return Stamp{}, fmt.Errorf("%s.stamp: %w", path, err)
	}
	return s, nil
}

// writeStamp writes the stamp of the binary at path, under a temporary name
// renamed into place: a reader finds the old stamp or the new, never half.
func writeStamp(path string, s Stamp) error {
	tmp := path + ".stamp.tmp"
	if err := os.WriteFile(tmp, []byte(s.String()+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path+".stamp")
}
