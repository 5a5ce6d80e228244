package assets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The build script's stamp rule, run against a fake `go` that answers `go env`
// with a Go version of the test's choosing and "builds" by writing a file, so
// no real build runs.

const fakeGo = `#!/bin/sh
case "$1" in
env) echo "$FAKE_GOVERSION"; echo "$FAKE_HOSTOS"; echo "$FAKE_HOSTARCH" ;;
build)
	shift
	out=""
	pkgs=""
	while [ $# -gt 0 ]; do
		case "$1" in
		-o) out=$2; shift ;;
		-ldflags=*) echo "$1" >>"$FAKE_GO_LOG.flags" ;;
		-*) ;;
		*) pkgs="$pkgs $1" ;;
		esac
		shift
	done
	for p in $pkgs; do
		echo "$GOOS/$GOARCH CGO_ENABLED=$CGO_ENABLED" >"$out/${p##*/}"
		echo "$GOOS/$GOARCH" >>"$FAKE_GO_LOG"
	done ;;
*) echo "fake go: $*" >&2; exit 2 ;;
esac
`

// other is a supported platform that is not this one.
func other() Platform {
	if Host() == "darwin/arm64" {
		return "linux/amd64"
	}
	return "darwin/arm64"
}

type scriptEnv struct {
	fakeBin, log, cache string
}

func newScriptEnv(t *testing.T) scriptEnv {
	t.Helper()
	s := scriptEnv{fakeBin: t.TempDir(), cache: t.TempDir()}
	s.log = filepath.Join(t.TempDir(), "builds")
	if err := os.WriteFile(filepath.Join(s.fakeBin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs the build script with Go goVersion; it returns its output and the
// platforms of the binaries it built.
func (s scriptEnv) run(t *testing.T, goVersion string, args ...string) (string, []string) {
	t.Helper()
	_ = os.Remove(s.log)
	cmd := exec.Command("bash", append([]string{filepath.Join("..", "..", BuildScript)}, args...)...)
	cmd.Env = []string{
		"PATH=" + s.fakeBin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=/nonexistent", "XDG_CACHE_HOME=" + s.cache,
		"FAKE_GOVERSION=" + goVersion, "FAKE_GO_LOG=" + s.log,
		"FAKE_HOSTOS=" + Host().OS(), "FAKE_HOSTARCH=" + Host().Arch(),
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", BuildScript, args, err, out.String())
	}
	b, _ := os.ReadFile(s.log)
	return out.String(), strings.Fields(string(b))
}

func (s scriptEnv) hostDir() string {
	return filepath.Join(s.cache, "rlab", "controlplane", KubeVersion)
}

// setStamps rewrites every binary's stamp with edit applied.
func (s scriptEnv) setStamps(t *testing.T, dir string, edit func(string, *Stamp)) {
	t.Helper()
	for _, b := range Binaries {
		st, err := ReadStamp(filepath.Join(dir, b))
		if err != nil {
			t.Fatal(err)
		}
		edit(b, &st)
		if err := writeStamp(filepath.Join(dir, b), st); err != nil {
			t.Fatal(err)
		}
	}
}

// legacyStamp is what the script wrote before stamps named their recipe
// (commit d7b5121) for Go goVersion, or "" where git cannot show that script.
func legacyStamp(t *testing.T, goVersion string) string {
	t.Helper()
	old, err := exec.Command("git", "-C", filepath.Join("..", ".."), "show", "d7b5121:"+BuildScript).Output()
	if err != nil {
		t.Logf("no legacy stamp: git show d7b5121:%s: %v", BuildScript, err)
		return ""
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "controlplane", f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	h.Write(old)
	h.Write([]byte(goVersion + "\n"))
	return hex.EncodeToString(h.Sum(nil))[:16] + "\n"
}

func TestScriptStampRule(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(bin string, s *Stamp)
		raw       string // a stamp file's whole content instead of edit
		goVersion string // of the check
		rebuilds  bool
	}{
		{"up to date", func(string, *Stamp) {}, "", "go1.26.1", false},
		{"a newer Go rebuilds a local build", func(string, *Stamp) {}, "", "go1.26.2", true},
		{"a newer Go keeps a packed one", func(_ string, s *Stamp) { s.Origin = OriginPack }, "", "go1.26.2", false},
		{"a newer Go keeps a mirror's", func(_ string, s *Stamp) { s.Origin = OriginMirror }, "", "go1.26.2", false},
		{"no Go version in common, packed", func(_ string, s *Stamp) { s.Origin, s.Go = OriginPack, "go1.27.0" }, "", "go1.26.1", false},
		{"another recipe rebuilds even a packed one", func(_ string, s *Stamp) { s.Origin, s.Recipe = OriginPack, "0000000000000000" }, "", "go1.26.1", true},
		{"another platform rebuilds", func(_ string, s *Stamp) { s.Platform = other() }, "", "go1.26.1", true},
		// Release binaries as Fetch stamps them: kept while their versions
		// are the pinned ones, whatever Go and recipe this tree has.
		{"the pinned releases are kept", func(b string, s *Stamp) { *s = releaseStamp(Host(), releaseVersion(b)) }, "", "go1.26.2", false},
		{"another release rebuilds", func(b string, s *Stamp) { *s = releaseStamp(Host(), "v1.0.0") }, "", "go1.26.1", true},
		{"a release for another platform rebuilds", func(b string, s *Stamp) { *s = releaseStamp(other(), releaseVersion(b)) }, "", "go1.26.1", true},
		{"an older script's stamp rebuilds", nil, "0123456789abcdef\n", "go1.26.1", true},
		// The stamp the script wrote before it named recipe and platform:
		// taken (and rewritten) while it holds, if git can show that script.
		{"the previous script's stamp, still true", nil, legacyStamp(t, "go1.26.1"), "go1.26.1", legacyStamp(t, "go1.26.1") == ""},
		{"the previous script's stamp, another Go", nil, legacyStamp(t, "go1.26.1"), "go1.26.2", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScriptEnv(t)
			if _, built := s.run(t, "go1.26.1"); len(built) != len(Binaries) {
				t.Fatalf("first run built %v, want all %d", built, len(Binaries))
			}
			if tc.raw != "" {
				for _, b := range Binaries {
					if err := os.WriteFile(filepath.Join(s.hostDir(), b+".stamp"), []byte(tc.raw), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				s.setStamps(t, s.hostDir(), tc.edit)
			}
			out, built := s.run(t, tc.goVersion)
			if got := len(built) > 0; got != tc.rebuilds || (got && len(built) != len(Binaries)) {
				t.Fatalf("rebuilt %v, want rebuilds=%v\n%s", built, tc.rebuilds, out)
			}
			for _, b := range Binaries { // up to date or rebuilt, in the current form
				if st, err := ReadStamp(filepath.Join(s.hostDir(), b)); err != nil || st.Platform != Host() {
					t.Errorf("%s: stamp %+v, %v", b, st, err)
				}
			}
		})
	}
}

// TestScriptCrossBuild: --platform builds into its own directory, for that
// GOOS/GOARCH, stamped with it; the host's directory is not touched.
func TestScriptCrossBuild(t *testing.T) {
	s := newScriptEnv(t)
	p := other()
	out, built := s.run(t, "go1.26.1", "--platform", string(p))
	dir := filepath.Join(s.cache, "rlab", "controlplane", KubeVersion+"-"+p.Slug())
	if len(built) != len(Binaries) || built[0] != string(p) || !strings.HasSuffix(out, dir+"\n") {
		t.Fatalf("built %v; output:\n%s", built, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "kwok")); err != nil || string(b) != string(p)+" CGO_ENABLED=0\n" {
		t.Errorf("kwok = %q, %v", b, err)
	}
	if st, err := ReadStamp(filepath.Join(dir, "kwok")); err != nil || st.Platform != p || st.Origin != OriginBuild || st.Go != "go1.26.1" {
		t.Errorf("stamp = %+v, %v", st, err)
	}
	if _, err := os.Stat(s.hostDir()); !os.IsNotExist(err) {
		t.Errorf("the host's directory was touched: %v", err)
	}
	if _, built := s.run(t, "go1.26.1", "--platform", string(p)); len(built) != 0 {
		t.Errorf("second cross-build rebuilt %v", built)
	}
	stamp, _ := s.run(t, "go1.26.1", "--print-stamp", "--platform", string(p))
	if !regexp.MustCompile(`^[0-9a-f]{16} ` + string(p) + ` go1.26.1 build\n$`).MatchString(stamp) {
		t.Errorf("--print-stamp = %q", stamp)
	}
}

// TestUnpackedNeedsNoRebuild: binaries installed by Unpack, stamped with the
// recipe of this source tree by another machine's Go, are up to date for the
// build script whatever Go this machine has, and Find takes them.
func TestUnpackedNeedsNoRebuild(t *testing.T) {
	s := newScriptEnv(t)
	line, _ := s.run(t, "go1.26.1", "--print-stamp")
	recipe := strings.Fields(line)[0]
	u := unpackEnv{cache: s.cache, env: envOf(map[string]string{"XDG_CACHE_HOME": s.cache, "HOME": "/nonexistent"})}
	u.cp, u.bin = OwnDir(u.env), BinDir(u.env)
	es := fakeEntries(Host(), recipe)
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	writeArchive(t, archive, manifestOf(map[Platform][]entry{Host(): es}, Host()), es, false)
	if _, err := Unpack(context.Background(), UnpackOptions{Env: u.env, Archive: archive}); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(u.env); err != nil {
		t.Fatalf("Find after unpack: %v", err)
	}
	if out, built := s.run(t, "go1.26.9"); len(built) != 0 {
		t.Fatalf("the build script rebuilt %v after unpack:\n%s", built, out)
	}
}

// releaseVersion is the release version Fetch installs binary b at.
func releaseVersion(b string) string {
	arts, err := Official.releaseArtifacts(Host(), []string{b})
	if err != nil {
		panic(err)
	}
	return arts[0].Version
}

// TestScriptOneBuild: what is missing is built by one go build, each binary
// with its own -ldflags by package pattern (so the binaries are the ones a
// go build per binary made); what is up to date is left alone.
func TestScriptOneBuild(t *testing.T) {
	s := newScriptEnv(t)
	out, built := s.run(t, "go1.26.1")
	if len(built) != len(Binaries) || !strings.Contains(out, "in one go build") {
		t.Fatalf("built %v\n%s", built, out)
	}
	flags, err := os.ReadFile(s.log + ".flags")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"-ldflags=k8s.io/kubernetes/cmd/kube-apiserver=-s -w  -X k8s.io/component-base/version.gitVersion=" + KubeVersion,
		"-ldflags=./etcd=-s -w\n",
		"-ldflags=sigs.k8s.io/kwok/cmd/kwok=-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=" + strings.TrimPrefix(KwokVersion, "v"),
	} {
		if !strings.Contains(string(flags), want) {
			t.Errorf("the go build had no %q:\n%s", want, flags)
		}
	}
	if err := os.Remove(filepath.Join(s.hostDir(), "kwok")); err != nil {
		t.Fatal(err)
	}
	if out, built := s.run(t, "go1.26.1"); len(built) != 1 || !strings.Contains(out, "building kwok for") {
		t.Fatalf("after removing kwok, built %v\n%s", built, out)
	}
	if left, _ := filepath.Glob(filepath.Join(s.hostDir(), ".build.*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
}

// The versions the release fetch pins are the ones the source build pins.
func TestPinnedVersions(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", BuildScript))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join("..", "..", "scripts", "controlplane", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{string(script), "readonly KUBE_VERSION=" + KubeVersion + "\n"},
		{string(script), "readonly KWOK_VERSION=" + KwokVersion + "\n"},
		{string(script), "readonly ETCD_VERSION=" + EtcdVersion + " "},
		{string(gomod), "require go.etcd.io/etcd/server/v3 " + EtcdVersion + "\n"},
		{string(gomod), "sigs.k8s.io/kwok " + KwokVersion},
	} {
		if !strings.Contains(tc.in, tc.want) {
			t.Errorf("want %q pinned", tc.want)
		}
	}
}
