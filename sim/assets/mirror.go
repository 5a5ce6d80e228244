package assets

import (
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
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// A classroom mirror is an HTTP server on the instructor's machine (`rlab
// assets serve`) that hands out its control plane to students' rlabs on the
// LAN, so that 30 laptops do not each download or build it:
//
//	GET /rlab-assets/index.json                         a MirrorIndex
//	GET /rlab-assets/linux-amd64/controlplane/etcd      a binary (Range works)
//
// A student's `rlab assets fetch --from URL` reads the index, takes its own
// platform's binaries and checks each against the index's sha256.

// MirrorFormat names the index's layout; a fetch refuses any other.
const MirrorFormat = "rlab-mirror/1"

// MirrorPrefix is the path under which a mirror serves.
const MirrorPrefix = "/rlab-assets/"

// MirrorIndex lists what a mirror serves.
type MirrorIndex struct {
	Format     string         `json:"format"`
	Kubernetes string         `json:"kubernetes"`
	Platforms  []PlatformFile `json:"platforms"` // each File's Path as in an archive: SLUG/controlplane/BIN
}

// ServeOptions says what to serve where.
type ServeOptions struct {
	Env  Env
	Addr string // HOST:PORT
	// Archive serves an `rlab assets pack` archive instead of the cache; it
	// is checked and unpacked into a temporary directory first.
	Archive string
	Log     io.Writer
	// Ready is called with the address listened on once the server serves.
	Ready func(addr string)
}

// Serve runs a classroom mirror until ctx ends.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	var idx *MirrorIndex
	var files map[string]*os.File // by index path; open, so what is served is what was hashed
	var err error
	if o.Archive != "" {
		tmp, terr := os.MkdirTemp("", "rlab-mirror-")
		if terr != nil {
			return terr
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintf(o.Log, "checking %s and unpacking it into %s ...\n", o.Archive, tmp)
		idx, files, err = archiveIndex(ctx, o.Archive, tmp)
	} else {
		idx, files, err = cacheIndex(o.Env)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		return err
	}
	body, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	sizes := map[string]int64{}
	for _, pf := range idx.Platforms {
		for _, f := range pf.Files {
			sizes[f.Path] = f.Size
		}
	}

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", o.Addr, err)
	}
	var served atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+MirrorPrefix+"index.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	mux.HandleFunc("GET "+MirrorPrefix+"{file...}", func(w http.ResponseWriter, r *http.Request) {
		rel := r.PathValue("file")
		f, ok := files[rel]
		if !ok {
			http.Error(w, "no such file: see "+MirrorPrefix+"index.json", http.StatusNotFound)
			return
		}
		start := time.Now()
		// From the file opened when it was hashed: a build that replaces
		// it meanwhile (a rename) does not change what students get.
		http.ServeContent(w, r, path.Base(rel), time.Time{}, io.NewSectionReader(f, 0, sizes[rel]))
		if r.Header.Get("Range") == "" {
			served.Add(1)
			fmt.Fprintf(o.Log, "served %s (%s) to %s in %.1fs\n", rel, MB(sizes[rel]), r.RemoteAddr, time.Since(start).Seconds())
		}
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "rlab classroom mirror, Kubernetes %s\non a student's machine: rlab assets fetch --from http://%s\n", idx.Kubernetes, r.Host)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	addr := ln.Addr().String()
	for _, pf := range idx.Platforms {
		var size int64
		for _, f := range pf.Files {
			size += f.Size
		}
		fmt.Fprintf(o.Log, "serving the control plane %s for %s (%d files, %s)\n", idx.Kubernetes, pf.Platform, len(pf.Files), MB(size))
	}
	urls := studentURLs(ln.Addr().(*net.TCPAddr))
	for _, u := range urls {
		fmt.Fprintf(o.Log, "students: rlab assets fetch --from %s\n", u)
	}
	if len(urls) == 0 {
		fmt.Fprintf(o.Log, "no address of this machine but loopback: students cannot reach %s\n", addr)
		urls = []string{"http://" + addr}
	}
	if o.Ready != nil {
		o.Ready(strings.TrimPrefix(urls[0], "http://"))
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close() // transfers still going after 5 s are cut
	}
	fmt.Fprintf(o.Log, "stopped after serving %d files\n", served.Load())
	return nil
}

// studentURLs are the URLs students can use: the address listened on, or,
// for an unspecified one (0.0.0.0, ::), each address of this machine's
// interfaces but loopback, link-local ones and containers' bridges.
func studentURLs(a *net.TCPAddr) []string {
	if !a.IP.IsUnspecified() {
		return []string{"http://" + a.String()}
	}
	var out []string
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || isBridge(ifc.Name) {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok || ipn.IP.IsLinkLocalUnicast() || (ipn.IP.To4() == nil && a.IP.To4() != nil) {
				continue
			}
			out = append(out, "http://"+net.JoinHostPort(ipn.IP.String(), fmt.Sprint(a.Port)))
		}
	}
	return out
}

// isBridge: an interface of containers or VMs on this machine, not of the LAN.
func isBridge(name string) bool {
	for _, p := range []string{"docker", "br-", "veth", "virbr", "cni", "flannel", "kind"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// cacheIndex indexes the cache: the host's control plane and every other
// platform's that was fetched or cross-built beside it, each only if
// complete; it returns the files open.
func cacheIndex(env Env) (*MirrorIndex, map[string]*os.File, error) {
	idx := &MirrorIndex{Format: MirrorFormat, Kubernetes: KubeVersion}
	files := map[string]*os.File{}
	var skipped []string
	for _, p := range Supported {
		dir := PlatformDir(env, p)
		pf, err := platformFiles(dir, p, files)
		if err != nil {
			if p == Host() || !errors.Is(err, os.ErrNotExist) {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", p, err))
			}
			continue
		}
		idx.Platforms = append(idx.Platforms, *pf)
	}
	if len(idx.Platforms) == 0 {
		return nil, files, fmt.Errorf("nothing to serve: no complete control plane in the cache (%s); get it first with `rlab assets get`, or serve an archive with --archive",
			strings.Join(skipped, "; "))
	}
	return idx, files, nil
}

// platformFiles opens and hashes the Binaries in dir, which must all be
// there with a stamp naming p, and adds them to files.
func platformFiles(dir string, p Platform, files map[string]*os.File) (*PlatformFile, error) {
	pf := &PlatformFile{Platform: p}
	for _, b := range Binaries {
		path := filepath.Join(dir, b)
		s, err := ReadStamp(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		if s.Platform != p {
			return nil, fmt.Errorf("%s is stamped for %s", path, s.Platform)
		}
		file, err := indexFile(path, controlPlanePath(p, b), s.String(), files)
		if err != nil {
			return nil, err
		}
		pf.Files = append(pf.Files, file)
	}
	return pf, nil
}

// indexFile opens path, hashes it from the open file and keeps it in files
// under entry.
func indexFile(path, entry, stamp string, files map[string]*os.File) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		f.Close()
		return File{}, err
	}
	files[entry] = f
	return File{Path: entry, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), Stamp: stamp}, nil
}

// archiveIndex checks an archive and unpacks its control planes under dir;
// it returns the files open.
func archiveIndex(ctx context.Context, archive, dir string) (*MirrorIndex, map[string]*os.File, error) {
	m, _, err := readArchive(ctx, archive, func(m *Manifest) error {
		if m.Kubernetes != KubeVersion {
			return fmt.Errorf("%s holds Kubernetes %s, and this rlab serves %s: serve it with the rlab inside it", archive, m.Kubernetes, KubeVersion)
		}
		for _, pf := range m.Platforms {
			if err := os.MkdirAll(filepath.Join(dir, pf.Platform.Slug(), "controlplane"), 0o755); err != nil {
				return err
			}
		}
		return nil
	}, func(f File) string {
		if f.Stamp == "" { // rlab itself: students have theirs
			return ""
		}
		return filepath.Join(dir, filepath.FromSlash(f.Path))
	})
	files := map[string]*os.File{}
	if err != nil {
		return nil, files, err
	}
	idx := &MirrorIndex{Format: MirrorFormat, Kubernetes: m.Kubernetes}
	for _, pf := range m.Platforms {
		out := PlatformFile{Platform: pf.Platform}
		for _, f := range pf.Files {
			if f.Stamp == "" {
				continue
			}
			file, err := indexFile(filepath.Join(dir, filepath.FromSlash(f.Path)), f.Path, f.Stamp, files)
			if err != nil {
				return nil, files, err
			}
			out.Files = append(out.Files, file)
		}
		idx.Platforms = append(idx.Platforms, out)
	}
	return idx, files, nil
}

// mirrorArtifacts reads the mirror's index and lists this platform's binaries.
func (f *fetcher) mirrorArtifacts(ctx context.Context) ([]artifact, error) {
	base := strings.TrimSuffix(f.o.From, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("mirror %q: want a URL such as http://192.168.1.10:8080", f.o.From)
	}
	url := base + MirrorPrefix + "index.json"
	b, err := f.small(ctx, url)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return nil, fmt.Errorf("%s is not an rlab mirror (GET %s: %s): start one with `rlab assets serve`", f.o.From, url, se.Status)
		}
		return nil, err
	}
	var idx MirrorIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: not a mirror index: %w", url, err)
	}
	if idx.Format != MirrorFormat {
		return nil, fmt.Errorf("%s: index format %q, and this rlab reads %q", url, idx.Format, MirrorFormat)
	}
	if idx.Kubernetes != KubeVersion {
		return nil, fmt.Errorf("the mirror %s serves Kubernetes %s, and this rlab runs %s: use the same rlab as the instructor", f.o.From, idx.Kubernetes, KubeVersion)
	}
	var mine *PlatformFile
	var have []Platform
	for i := range idx.Platforms {
		have = append(have, idx.Platforms[i].Platform)
		if idx.Platforms[i].Platform == f.o.Platform {
			mine = &idx.Platforms[i]
		}
	}
	if mine == nil {
		return nil, fmt.Errorf("the mirror %s has no control plane for %s, only for %s: the instructor can add it with `rlab assets pack --platform %s` and serve the archive",
			f.o.From, f.o.Platform, joinPlatforms(have), f.o.Platform)
	}
	f.stamps = map[string]Stamp{}
	var out []artifact
	for _, name := range f.o.Names {
		i := slices.IndexFunc(mine.Files, func(x File) bool { return x.Path == controlPlanePath(f.o.Platform, name) })
		if i < 0 {
			return nil, fmt.Errorf("the mirror %s has no %s for %s", f.o.From, name, f.o.Platform)
		}
		file := mine.Files[i]
		s, err := ParseStamp(file.Stamp)
		if err != nil || s.Platform != f.o.Platform || len(file.SHA256) != 64 {
			return nil, fmt.Errorf("%s: the entry for %s has no valid stamp and sha256", url, file.Path)
		}
		if s.Origin != OriginRelease {
			s.Origin = OriginMirror
		}
		f.stamps[name] = s
		out = append(out, artifact{Name: name, URL: base + MirrorPrefix + path.Clean(file.Path), Sum: sumSource{Fixed: file.SHA256}})
	}
	return out, nil
}
