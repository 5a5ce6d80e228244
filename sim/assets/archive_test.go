package assets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// entry is one file of a test archive: what the manifest says, and the bytes
// the archive really holds (the same unless a test tampers with them).
type entry struct {
	File
	data []byte
}

// fakeEntries makes rlab and the six binaries of p, with stamps of recipe.
func fakeEntries(p Platform, recipe string) []entry {
	mk := func(path, stamp string) entry {
		data := []byte("#!/bin/sh\necho " + path + "\n")
		sum := sha256.Sum256(data)
		return entry{File: File{Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Stamp: stamp}, data: data}
	}
	es := []entry{mk(rlabPath(p), "")}
	for _, b := range Binaries {
		es = append(es, mk(controlPlanePath(p, b), Stamp{Recipe: recipe, Platform: p, Go: "go1.26.1", Origin: OriginBuild}.String()))
	}
	return es
}

func manifestOf(platforms map[Platform][]entry, order ...Platform) *Manifest {
	m := &Manifest{Format: ManifestFormat, Created: time.Unix(1e9, 0).UTC(), Rlab: "v9.9.9", Kubernetes: KubeVersion, Kwok: KwokVersion, Go: "go1.26.1"}
	for _, p := range order {
		pf := PlatformFile{Platform: p}
		for _, e := range platforms[p] {
			pf.Files = append(pf.Files, e.File)
		}
		m.Platforms = append(m.Platforms, pf)
	}
	return m
}

// writeArchive writes a .tar.gz by hand: the manifest as first entry (unless
// noManifest), then the entries, as they are.
func writeArchive(t *testing.T, path string, m *Manifest, es []entry, noManifest bool) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	put := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if !noManifest {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		put(ManifestName, b)
	}
	for _, e := range es {
		put(e.Path, e.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unpackEnv is a per-user cache holding an older control plane (an old
// kube-apiserver, and a kubelet from the kind build), and no rlab yet.
type unpackEnv struct {
	cache, cp, bin string
	env            Env
}

func newUnpackEnv(t *testing.T) unpackEnv {
	t.Helper()
	cache := t.TempDir()
	u := unpackEnv{cache: cache, env: envOf(map[string]string{"XDG_CACHE_HOME": cache, "HOME": "/nonexistent"})}
	u.cp = OwnDir(u.env)
	u.bin = BinDir(u.env)
	if err := os.MkdirAll(u.cp, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"kube-apiserver": "old", "kube-apiserver.stamp": "0123456789abcdef\n", "kubelet": "kubelet", "kubelet.stamp": "k\n"} {
		if err := os.WriteFile(filepath.Join(u.cp, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// untouched fails t unless the cache is as newUnpackEnv left it: the old
// control plane, no rlab, and no staging directory left behind.
func (u unpackEnv) untouched(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(u.cp, "kube-apiserver")); err != nil || string(b) != "old" {
		t.Errorf("old kube-apiserver changed: %q, %v", b, err)
	}
	if des, _ := os.ReadDir(u.cp); len(des) != 4 {
		t.Errorf("control plane dir holds %v, want the 4 files it had", names(des))
	}
	if _, err := os.Stat(u.bin); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bin dir %s exists (%v): something was installed", u.bin, err)
	}
	u.noLeftovers(t)
}

func (u unpackEnv) noLeftovers(t *testing.T) {
	t.Helper()
	des, err := os.ReadDir(filepath.Dir(u.cp))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(des); !slices.Equal(got, []string{filepath.Base(u.cp)}) {
		t.Errorf("beside the control plane: %v, want only %s", got, filepath.Base(u.cp))
	}
}

func names(des []os.DirEntry) []string {
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func TestUnpackInstalls(t *testing.T) {
	u := newUnpackEnv(t)
	host, oth := fakeEntries(Host(), "r1"), fakeEntries(other(), "r1")
	m := manifestOf(map[Platform][]entry{Host(): host, other(): oth}, other(), Host())
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	writeArchive(t, archive, m, append(slices.Clone(oth), host...), false)

	in, err := Unpack(context.Background(), UnpackOptions{Env: u.env, Archive: archive})
	if err != nil {
		t.Fatal(err)
	}
	if in.ControlPlane != u.cp || in.Rlab != filepath.Join(u.bin, "rlab") || in.Verified != 14 || in.Platform != Host() {
		t.Errorf("Installed = %+v", in)
	}
	for _, e := range host {
		dst := filepath.Join(u.cp, strings.TrimPrefix(e.Path, controlPlanePath(Host(), "")))
		if e.Path == rlabPath(Host()) {
			dst = in.Rlab
		}
		b, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(b, e.data) {
			t.Errorf("%s: %q, %v; want %q", dst, b, err, e.data)
		}
		if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, %v", dst, st.Mode(), err)
		}
	}
	for _, b := range Binaries {
		s, err := ReadStamp(filepath.Join(u.cp, b))
		if want := (Stamp{Recipe: "r1", Platform: Host(), Go: "go1.26.1", Origin: OriginPack}); err != nil || s != want {
			t.Errorf("%s stamp = %+v, %v; want %+v", b, s, err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(u.cp, "kubelet")); err != nil || string(b) != "kubelet" {
		t.Errorf("kubelet not carried over: %q, %v", b, err)
	}
	if st, err := os.Stat(u.cp); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("control plane dir mode %v, %v", st.Mode(), err)
	}
	if dir, err := Find(u.env); err != nil || dir != u.cp {
		t.Errorf("Find after unpack = %q, %v", dir, err)
	}
	u.noLeftovers(t)
}

func TestUnpackRefuses(t *testing.T) {
	base := func() (map[Platform][]entry, []Platform) {
		return map[Platform][]entry{Host(): fakeEntries(Host(), "r1"), other(): fakeEntries(other(), "r1")}, []Platform{Host(), other()}
	}
	all := func(ps map[Platform][]entry, order []Platform) []entry {
		var out []entry
		for _, p := range order {
			out = append(out, ps[p]...)
		}
		return out
	}
	// big makes the entries large enough for damage to land in one.
	big := func(ps map[Platform][]entry, order []Platform) (map[Platform][]entry, []Platform) {
		for _, p := range order {
			for i := range ps[p] {
				e := &ps[p][i]
				e.data = bytes.Repeat([]byte(fmt.Sprintf("%s %d\n", e.Path, i)), 4000)
				sum := sha256.Sum256(e.data)
				e.Size, e.SHA256 = int64(len(e.data)), hex.EncodeToString(sum[:])
			}
		}
		return ps, order
	}
	otherEtcd := controlPlanePath(other(), "etcd")
	hostKwok := controlPlanePath(Host(), "kwok")
	tests := []struct {
		name string
		// make returns the manifest and the entries to write.
		make       func() (*Manifest, []entry)
		noManifest bool
		damage     func(b []byte) []byte // applied to the written file
		want       []string              // in the error
		wantType   any
	}{
		{
			name: "another platform's binary tampered with",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				es := all(ps, order)
				for i := range es {
					if es[i].Path == otherEtcd {
						es[i].data = bytes.Replace(es[i].data, []byte("echo"), []byte("ECHO"), 1)
					}
				}
				return manifestOf(ps, order...), es
			},
			want: []string{otherEtcd, "sha256", "nothing installed"}, wantType: &CorruptError{},
		},
		{
			name: "this platform's binary tampered with, after the others checked out",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				es := all(ps, []Platform{other(), Host()})
				for i := range es {
					if es[i].Path == hostKwok {
						es[i].data = bytes.Replace(es[i].data, []byte("echo"), []byte("ECHO"), 1)
					}
				}
				return manifestOf(ps, order...), es
			},
			want: []string{hostKwok, "sha256"}, wantType: &CorruptError{},
		},
		{
			name: "a binary of another size",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				es := all(ps, order)
				es[3].data = append(es[3].data, 'x')
				return manifestOf(ps, order...), es
			},
			want: []string{"size"}, wantType: &CorruptError{},
		},
		{
			name: "a file the manifest does not list",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				return manifestOf(ps, order...), append(all(ps, order), entry{File: File{Path: "linux-amd64/evil"}, data: []byte("x")})
			},
			want: []string{"linux-amd64/evil", "not listed"}, wantType: &CorruptError{},
		},
		{
			name: "a file the manifest lists is missing",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				es := all(ps, order)
				return manifestOf(ps, order...), es[:len(es)-1]
			},
			want: []string{"not in the archive"}, wantType: &CorruptError{},
		},
		{
			name: "no manifest",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				return nil, all(ps, order)
			},
			noManifest: true,
			want:       []string{"first entry is not manifest.json"}, wantType: &CorruptError{},
		},
		{
			name: "bytes flipped in the compressed stream",
			make: func() (*Manifest, []entry) {
				ps, order := big(base())
				return manifestOf(ps, order...), all(ps, order)
			},
			damage: func(b []byte) []byte {
				for i := len(b) / 2; i < len(b)/2+16; i++ {
					b[i] ^= 0xff
				}
				return b
			},
			want: []string{"archive damaged, nothing installed"}, wantType: &CorruptError{},
		},
		{
			name: "truncated",
			make: func() (*Manifest, []entry) {
				ps, order := big(base())
				return manifestOf(ps, order...), all(ps, order)
			},
			damage:   func(b []byte) []byte { return b[:len(b)*2/3] },
			want:     []string{"archive damaged, nothing installed"},
			wantType: &CorruptError{},
		},
		{
			name: "no files for this platform",
			make: func() (*Manifest, []entry) {
				ps := map[Platform][]entry{other(): fakeEntries(other(), "r1"), "linux/arm64": fakeEntries("linux/arm64", "r1")}
				if Host() == "linux/arm64" {
					ps = map[Platform][]entry{other(): ps[other()]}
				}
				order := slices.Sorted(maps.Keys(ps))
				return manifestOf(ps, order...), all(ps, order)
			},
			want:     []string{"no files for " + string(Host()), string(other()), "rlab assets pack --platform " + string(Host())},
			wantType: &PlatformError{},
		},
		{
			name: "another Kubernetes version than this rlab's",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				m := manifestOf(ps, order...)
				m.Kubernetes = "v1.35.0"
				return m, all(ps, order)
			},
			want: []string{"holds Kubernetes v1.35.0", "runs " + KubeVersion, "./" + rlabPath(Host()) + " assets unpack a.tar.gz"},
		},
		{
			name: "a manifest whose platform lacks a binary",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				ps[Host()] = slices.DeleteFunc(ps[Host()], func(e entry) bool { return e.Path == hostKwok })
				return manifestOf(ps, order...), all(ps, order)
			},
			want: []string{"manifest.json", "files for " + string(Host()) + " lack " + hostKwok}, wantType: &CorruptError{},
		},
		{
			// Its directories would leave where the archive is unpacked
			// (rlab assets serve --archive unpacks every platform).
			name: "a manifest with a platform that climbs out",
			make: func() (*Manifest, []entry) {
				ps, order := base()
				evil := Platform("linux/../../../tmp/x")
				ps[evil] = fakeEntries(evil, "0123456789abcdef")
				order = append(order, evil)
				return manifestOf(ps, order...), all(ps, order)
			},
			want: []string{"manifest.json", `platform "linux/../../../tmp/x", which rlab is not built for`}, wantType: &CorruptError{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnpackEnv(t)
			m, es := tc.make()
			archive := filepath.Join(t.TempDir(), "a.tar.gz")
			writeArchive(t, archive, m, es, tc.noManifest)
			if tc.damage != nil {
				b, err := os.ReadFile(archive)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(archive, tc.damage(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Unpack(context.Background(), UnpackOptions{Env: u.env, Archive: archive})
			if err == nil {
				t.Fatal("Unpack succeeded")
			}
			t.Logf("refused: %v", err)
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			switch tc.wantType.(type) {
			case *CorruptError:
				var ce *CorruptError
				if !errors.As(err, &ce) {
					t.Errorf("error %T, want *CorruptError", err)
				}
			case *PlatformError:
				var pe *PlatformError
				if !errors.As(err, &pe) {
					t.Errorf("error %T, want *PlatformError", err)
				}
			}
			u.untouched(t)
		})
	}
}

// TestPackedArchiveUnpacks: what the archive writer writes, Unpack reads,
// and the writer refuses a file that changed after it was hashed.
func TestPackedArchiveUnpacks(t *testing.T) {
	dir := t.TempDir()
	m := &Manifest{Format: ManifestFormat, Rlab: "v1", Kubernetes: KubeVersion, Kwok: KwokVersion, Go: "go1.26.1"}
	var srcs []source
	for _, e := range fakeEntries(Host(), "r1") {
		local := filepath.Join(dir, strings.ReplaceAll(e.Path, "/", "_"))
		if err := os.WriteFile(local, e.data, 0o755); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, source{File: e.File, Local: local})
	}
	m.Platforms = []PlatformFile{{Platform: Host()}}
	for _, s := range srcs {
		m.Platforms[0].Files = append(m.Platforms[0].Files, s.File)
	}
	write := func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		aw, err := newArchiveWriter(f, m)
		if err != nil {
			return err
		}
		for _, s := range srcs {
			if err := aw.add(s); err != nil {
				return err
			}
		}
		_, err = aw.close()
		return err
	}
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := write(archive); err != nil {
		t.Fatal(err)
	}
	u := newUnpackEnv(t)
	if _, err := Unpack(context.Background(), UnpackOptions{Env: u.env, Archive: archive}); err != nil {
		t.Fatal(err)
	}
	// Any tar reads it too: the bootstrap step of docs/instructor.md's instructions.
	if tarBin, err := exec.LookPath("tar"); err == nil {
		out, err := exec.Command(tarBin, "-tzf", archive).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), ManifestName+"\n") || !strings.Contains(string(out), rlabPath(Host())+"\n") {
			t.Errorf("tar -tzf: %v\n%s", err, out)
		}
	}

	if err := os.WriteFile(srcs[2].Local, []byte("rebuilt meanwhile"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := write(filepath.Join(t.TempDir(), "b.tar.gz")); err == nil || !strings.Contains(err.Error(), "changed while it was being packed") {
		t.Fatalf("packing a file that changed after hashing: %v", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	tests := []struct {
		in      string
		want    []Platform
		wantErr string
	}{
		{"linux/amd64", []Platform{"linux/amd64"}, ""},
		{"linux/amd64, darwin/arm64,linux/amd64", []Platform{"linux/amd64", "darwin/arm64"}, ""},
		{"windows/amd64", nil, `unsupported platform "windows/amd64"`},
		{"darwin", nil, `unsupported platform "darwin"`},
		{" , ", nil, "no platform"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePlatforms(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParsePlatforms(%q) = %v, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParsePlatforms(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestPlatformDir(t *testing.T) {
	env := envOf(map[string]string{"XDG_CACHE_HOME": "/c", "KUBEBUILDER_ASSETS": "/kb"})
	if got, want := PlatformDir(env, Host()), "/c/rlab/controlplane/"+KubeVersion; got != want {
		t.Errorf("host: %q, want %q (KUBEBUILDER_ASSETS is never built into)", got, want)
	}
	if got, want := PlatformDir(env, other()), "/c/rlab/controlplane/"+KubeVersion+"-"+other().Slug(); got != want {
		t.Errorf("other: %q, want %q", got, want)
	}
	env = envOf(map[string]string{"RLAB_ASSETS": "/r"})
	if got, want := PlatformDir(env, other()), "/r-"+other().Slug(); got != want {
		t.Errorf("other with RLAB_ASSETS: %q, want %q", got, want)
	}
}

// TestFindRefusesForeignPlatform: binaries stamped for another platform are
// as good as missing, and the message says why.
func TestFindRefusesForeignPlatform(t *testing.T) {
	dir := t.TempDir()
	for _, b := range Binaries {
		p := Host()
		if b == "etcd" {
			p = other()
		}
		if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeStamp(filepath.Join(dir, b), Stamp{Recipe: "r", Platform: p, Go: "go1.26.1", Origin: OriginPack}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Find(envOf(map[string]string{"RLAB_ASSETS": dir}))
	var miss *MissingError
	if !errors.As(err, &miss) || !slices.Equal(miss.Missing, []string{"etcd"}) ||
		!strings.Contains(err.Error(), "etcd (built for "+string(other())+", not "+string(Host())+")") {
		t.Fatalf("Find = %v", err)
	}
}
