package assets

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
)

// An offline archive (`rlab assets pack`) is one .tar.gz, readable by any tar:
//
//	manifest.json                         always the first entry
//	linux-amd64/rlab                      rlab for that platform
//	linux-amd64/controlplane/kube-apiserver ... the six Binaries
//	darwin-arm64/...                      and so on, per platform
//
// The manifest lists every other entry with its size and sha256. Unpack reads
// the archive once: it checks every entry of every platform against the
// manifest, keeps the running platform's in a staging directory, and only
// when the whole archive has checked out moves them into place.

// ManifestName is the archive's first entry.
const ManifestName = "manifest.json"

// ManifestFormat names the archive layout; Unpack refuses any other.
const ManifestFormat = "rlab-assets/1"

// Manifest describes an offline archive.
type Manifest struct {
	Format     string         `json:"format"`
	Created    time.Time      `json:"created"`
	Rlab       string         `json:"rlab"`       // rlab's version
	Kubernetes string         `json:"kubernetes"` // control plane version
	Kwok       string         `json:"kwok"`
	Go         string         `json:"go"` // the Go that packed it
	Platforms  []PlatformFile `json:"platforms"`
}

// PlatformFile lists one platform's files.
type PlatformFile struct {
	Platform Platform `json:"platform"`
	Files    []File   `json:"files"`
}

// File is one archive entry.
type File struct {
	Path   string `json:"path"` // in the archive, e.g. linux-amd64/controlplane/etcd
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Stamp is the control-plane binary's stamp at packing time (recipe,
	// platform, Go); Unpack writes it back with origin "pack". Empty for rlab.
	Stamp string `json:"stamp,omitempty"`
}

// Entry paths.
func rlabPath(p Platform) string                     { return p.Slug() + "/rlab" }
func controlPlanePath(p Platform, bin string) string { return p.Slug() + "/controlplane/" + bin }

// PlatformList names the platforms the archive has.
func (m *Manifest) PlatformList() []Platform {
	out := make([]Platform, len(m.Platforms))
	for i, pf := range m.Platforms {
		out[i] = pf.Platform
	}
	return out
}

// For returns p's files, or nil.
func (m *Manifest) For(p Platform) *PlatformFile {
	for i := range m.Platforms {
		if m.Platforms[i].Platform == p {
			return &m.Platforms[i]
		}
	}
	return nil
}

// check validates what a manifest says before anything is read by it: the
// format, and that each platform has rlab and the six binaries with stamps,
// at the paths this layout gives them, each path once.
func (m *Manifest) check() error {
	if m.Format != ManifestFormat {
		return fmt.Errorf("unknown archive format %q (this rlab reads %q): unpack it with the rlab it came with", m.Format, ManifestFormat)
	}
	if len(m.Platforms) == 0 {
		return errors.New("the manifest lists no platform")
	}
	seen := map[string]bool{}
	for _, pf := range m.Platforms {
		// A platform names directories: only the known ones, so that no
		// entry's path leaves where it is unpacked.
		if !slices.Contains(Supported, pf.Platform) {
			return fmt.Errorf("the manifest lists platform %q, which rlab is not built for (%s)", pf.Platform, joinPlatforms(Supported))
		}
		want := []string{rlabPath(pf.Platform)}
		for _, b := range Binaries {
			want = append(want, controlPlanePath(pf.Platform, b))
		}
		var got []string
		for _, f := range pf.Files {
			if seen[f.Path] {
				return fmt.Errorf("the manifest lists %s twice", f.Path)
			}
			seen[f.Path] = true
			if len(f.SHA256) != sha256.Size*2 || f.Size < 0 {
				return fmt.Errorf("the manifest's entry for %s has no valid size and sha256", f.Path)
			}
			if f.Path != rlabPath(pf.Platform) {
				s, err := ParseStamp(f.Stamp)
				if err != nil || s.Platform != pf.Platform {
					return fmt.Errorf("the manifest's entry for %s has no stamp for %s (%q)", f.Path, pf.Platform, f.Stamp)
				}
			}
			got = append(got, f.Path)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return fmt.Errorf("the manifest's files for %s lack %s", pf.Platform, w)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				return fmt.Errorf("the manifest's files for %s include %s, which this layout does not have", pf.Platform, g)
			}
		}
	}
	return nil
}

// source is one file to put in an archive, read from Local.
type source struct {
	File
	Local string
}

// archiveWriter writes an archive: the manifest, then each file, checking
// that what it copies is what the manifest says (a binary rebuilt while
// packing would otherwise ship with a wrong checksum).
type archiveWriter struct {
	cw *countWriter
	gz *gzip.Writer
	tw *tar.Writer
	at time.Time
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func newArchiveWriter(w io.Writer, m *Manifest) (*archiveWriter, error) {
	aw := &archiveWriter{cw: &countWriter{w: w}, at: m.Created}
	aw.gz = gzip.NewWriter(aw.cw)
	aw.tw = tar.NewWriter(aw.gz)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if err := aw.tw.WriteHeader(aw.header(ManifestName, int64(len(b)), 0o644)); err != nil {
		return nil, err
	}
	if _, err := aw.tw.Write(b); err != nil {
		return nil, err
	}
	return aw, nil
}

func (aw *archiveWriter) header(name string, size int64, mode int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: mode, ModTime: aw.at, Format: tar.FormatPAX}
}

// add copies one file in.
func (aw *archiveWriter) add(s source) error {
	f, err := os.Open(s.Local)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := aw.tw.WriteHeader(aw.header(s.Path, s.Size, 0o755)); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(aw.tw, io.TeeReader(f, h))
	if err != nil {
		return fmt.Errorf("%s: %w", s.Local, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != s.Size || sum != s.SHA256 {
		return fmt.Errorf("%s changed while it was being packed (is a build running into it?)", s.Local)
	}
	return nil
}

// flush ends the current deflate block and returns the compressed size so far.
func (aw *archiveWriter) flush() (int64, error) {
	if err := aw.tw.Flush(); err != nil {
		return 0, err
	}
	if err := aw.gz.Flush(); err != nil {
		return 0, err
	}
	return aw.cw.n, nil
}

func (aw *archiveWriter) close() (int64, error) {
	if err := aw.tw.Close(); err != nil {
		return 0, err
	}
	if err := aw.gz.Close(); err != nil {
		return 0, err
	}
	return aw.cw.n, nil
}

// hashFile returns a file's size and sha256.
func hashFile(name string) (int64, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", name, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// CorruptError: the archive does not match its manifest, or cannot be read.
// Nothing was installed.
type CorruptError struct {
	Archive string
	File    string // the entry at fault, if known
	Reason  string
	Err     error // the underlying read error, if any
}

func (e *CorruptError) Error() string {
	where := e.Archive
	if e.File != "" {
		where += ": " + e.File
	}
	msg := fmt.Sprintf("archive damaged, nothing installed: %s: %s", where, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *CorruptError) Unwrap() error { return e.Err }

// PlatformError: the archive has nothing for the platform asked for.
type PlatformError struct {
	Archive string
	Want    Platform
	Have    []Platform
}

func (e *PlatformError) Error() string {
	return fmt.Sprintf("%s has no files for %s (this machine); it has %s: pack one with `rlab assets pack --platform %s`",
		e.Archive, e.Want, joinPlatforms(e.Have), e.Want)
}

// UnpackOptions says what to unpack where.
type UnpackOptions struct {
	Env     Env
	Archive string
	// Platform to install; default Host(). Every platform is verified.
	Platform Platform
	// ControlPlaneDir receives the binaries; default OwnDir(Env), where Find
	// looks unless KUBEBUILDER_ASSETS is set.
	ControlPlaneDir string
	// BinDir receives rlab; default BinDir(Env).
	BinDir string
}

// Installed says what Unpack put where.
type Installed struct {
	Manifest     *Manifest
	Platform     Platform
	ControlPlane string // directory
	Rlab         string // the rlab binary
	Verified     int    // entries checked against the manifest
}

// Unpack verifies an archive and installs its files for one platform: the
// control plane into ControlPlaneDir (stamped so that neither Find nor the
// build script wants to rebuild it, see Stamp) and rlab into BinDir. Every
// entry of every platform is checked before anything is installed; a damaged
// archive (*CorruptError) or one without the platform (*PlatformError)
// installs nothing. Each directory is replaced in one rename, so a reader
// sees the old binaries or the new ones, never a mix; files in it that the
// archive does not carry (kubelet, kubeadm) are kept.
func Unpack(ctx context.Context, o UnpackOptions) (*Installed, error) {
	if o.Platform == "" {
		o.Platform = Host()
	}
	if o.ControlPlaneDir == "" {
		o.ControlPlaneDir = OwnDir(o.Env)
	}
	if o.BinDir == "" {
		o.BinDir = BinDir(o.Env)
	}
	parent := filepath.Dir(o.ControlPlaneDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	staging, err := os.MkdirTemp(parent, ".unpack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	stagedCP := filepath.Join(staging, "controlplane")
	if err := os.Mkdir(stagedCP, 0o755); err != nil {
		return nil, err
	}
	var mine *PlatformFile
	m, seen, err := readArchive(ctx, o.Archive, func(m *Manifest) error {
		if m.Kubernetes != KubeVersion {
			// Its control plane belongs in another version's directory, which
			// this rlab would never look in.
			return fmt.Errorf("%s holds Kubernetes %s, and this rlab runs %s: unpack it with the rlab inside it (tar -xzf %s %s && ./%s assets unpack %s)",
				o.Archive, m.Kubernetes, KubeVersion, filepath.Base(o.Archive), rlabPath(o.Platform), rlabPath(o.Platform), filepath.Base(o.Archive))
		}
		if mine = m.For(o.Platform); mine == nil {
			return &PlatformError{Archive: o.Archive, Want: o.Platform, Have: m.PlatformList()}
		}
		return nil
	}, func(f File) string {
		// The platform's entries are kept in a staging directory on the
		// control plane's file system (so that the install is a rename).
		if strings.HasPrefix(f.Path, o.Platform.Slug()+"/") {
			return filepath.Join(staging, stagedName(o.Platform, f.Path))
		}
		return ""
	})
	if err != nil {
		return nil, err
	}

	// 3. Install: stamps, files the old directory has that the archive does
	// not, then one rename per destination.
	for _, f := range mine.Files {
		if f.Stamp == "" {
			continue
		}
		s, _ := ParseStamp(f.Stamp)    // checked by m.check
		if s.Origin != OriginRelease { // a release binary stays one: its recipe is its version
			s.Origin = OriginPack
		}
		if err := writeStamp(filepath.Join(staging, stagedName(o.Platform, f.Path)), s); err != nil {
			return nil, err
		}
	}
	if err := carryOver(o.ControlPlaneDir, stagedCP); err != nil {
		return nil, err
	}
	if err := replaceDir(stagedCP, o.ControlPlaneDir); err != nil {
		return nil, fmt.Errorf("installing the control plane into %s: %w", o.ControlPlaneDir, err)
	}
	rlab := filepath.Join(o.BinDir, "rlab")
	if err := installFile(filepath.Join(staging, "rlab"), rlab); err != nil {
		return nil, fmt.Errorf("installing rlab into %s (the control plane is installed): %w", o.BinDir, err)
	}
	return &Installed{Manifest: m, Platform: o.Platform, ControlPlane: o.ControlPlaneDir, Rlab: rlab, Verified: seen}, nil
}

// readArchive reads an archive made by Pack once, checking every entry of
// every platform against its manifest (a *CorruptError if one does not
// match). check sees the manifest before any entry is read; keep names the
// file an entry is written to ("" for none).
func readArchive(ctx context.Context, archive string, check func(*Manifest) error, keep func(File) string) (*Manifest, int, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	bad := func(file, reason string, err error) error {
		return &CorruptError{Archive: archive, File: file, Reason: reason, Err: err}
	}
	gz, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, 0, bad("", "not a .tar.gz (not an archive made by rlab assets pack?)", err)
	}
	tr := tar.NewReader(gz)

	// 1. The manifest, first.
	h, err := tr.Next()
	if err != nil {
		return nil, 0, bad("", "cannot read the first entry", err)
	}
	if h.Name != ManifestName {
		return nil, 0, bad(h.Name, "the first entry is not "+ManifestName+" (not an archive made by rlab assets pack?)", nil)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
		return nil, 0, bad(ManifestName, "unreadable", err)
	}
	if err := m.check(); err != nil {
		return nil, 0, bad(ManifestName, err.Error(), nil)
	}
	if err := check(&m); err != nil {
		return nil, 0, err
	}
	want := map[string]File{}
	for _, pf := range m.Platforms {
		for _, f := range pf.Files {
			want[f.Path] = f
		}
	}

	// 2. Every entry, checked.
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, bad("", "cannot read past the last good entry", err)
		}
		name := h.Name
		wf, ok := want[name]
		switch {
		case !ok:
			return nil, 0, bad(name, "not listed in the manifest", nil)
		case seen[name]:
			return nil, 0, bad(name, "in the archive twice", nil)
		case h.Typeflag != tar.TypeReg:
			return nil, 0, bad(name, "not a regular file", nil)
		case h.Size != wf.Size:
			return nil, 0, bad(name, fmt.Sprintf("size %d, the manifest says %d", h.Size, wf.Size), nil)
		}
		seen[name] = true
		var dst io.Writer = io.Discard
		var out *os.File
		if path := keep(wf); path != "" {
			out, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
			if err != nil {
				return nil, 0, err
			}
			if err := out.Chmod(0o755); err != nil { // whatever the umask
				out.Close()
				return nil, 0, err
			}
			dst = out
		}
		sum := sha256.New()
		n, err := io.Copy(io.MultiWriter(dst, sum), tr)
		if out != nil {
			if cerr := out.Close(); err == nil && cerr != nil {
				return nil, 0, cerr
			}
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, 0, err // writing the kept copy failed: not the archive's fault
			}
			return nil, 0, bad(name, "unreadable", err)
		}
		if got := hex.EncodeToString(sum.Sum(nil)); n != wf.Size || got != wf.SHA256 {
			return nil, 0, bad(name, fmt.Sprintf("sha256 %s, the manifest says %s", got, wf.SHA256), nil)
		}
	}
	// The gzip trailer's checksum is read only at its end.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, 0, bad("", "the end of the archive is unreadable", err)
	}
	for _, pf := range m.Platforms {
		for _, f := range pf.Files {
			if !seen[f.Path] {
				return nil, 0, bad(f.Path, "listed in the manifest but not in the archive (truncated?)", nil)
			}
		}
	}
	return &m, len(seen), nil
}

// stagedName is where an entry of platform p goes in the staging directory:
// "rlab" or "controlplane/NAME".
func stagedName(p Platform, entry string) string {
	return strings.TrimPrefix(entry, p.Slug()+"/")
}

// carryOver hard-links (or copies) into staged the regular files of dir that
// staged lacks, with their stamps: what other builds put there (kubelet and
// kubeadm for the kind node image) survives the replacement. Dot files are a
// build's temporaries and stay behind.
func carryOver(dir, staged string) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") || !de.Type().IsRegular() {
			continue
		}
		bin := strings.TrimSuffix(name, ".stamp")
		if _, err := os.Lstat(filepath.Join(staged, bin)); err == nil {
			continue // the archive has a newer one (and its stamp)
		}
		src, dst := filepath.Join(dir, name), filepath.Join(staged, name)
		if err := os.Link(src, dst); err != nil {
			if err := copyFile(src, dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// replaceDir puts the directory staged at dir in one rename, moving any old
// dir aside first and back if the rename fails.
func replaceDir(staged, dir string) error {
	if err := os.Chmod(staged, 0o755); err != nil {
		return err
	}
	old := ""
	if _, err := os.Lstat(dir); err == nil {
		old = filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".old-"+fmt.Sprint(time.Now().UnixNano()))
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(staged, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// installFile moves src to dst in one rename, copying it first to dst's
// directory when that is another file system.
func installFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	err := os.Rename(src, dst)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".new-"+fmt.Sprint(time.Now().UnixNano()))
	if err := copyFile(src, tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
