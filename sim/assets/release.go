package assets

import (
	"fmt"
	"strings"
)

// EtcdVersion is the etcd version scripts/controlplane pins (its go.mod's
// go.etcd.io/etcd/server/v3), and so the etcd release rlab fetches.
const EtcdVersion = "v3.6.8"

// Upstream says where the releases are published: the same places kwokctl's
// binary runtime downloads from (sigs.k8s.io/kwok's pkg/config/vars.go and
// pkg/consts), each a base URL so that a test can stand a local server in.
type Upstream struct {
	// Kube serves the Kubernetes release binaries and their .sha256 files:
	// {Kube}/release/v1.36.3/bin/linux/amd64/kube-apiserver(.sha256).
	// Kubernetes releases its server binaries for Linux only; for macOS,
	// kubectl alone.
	Kube string
	// GitHub serves release assets: {GitHub}/OWNER/REPO/releases/download/TAG/NAME.
	// etcd and kwok release there; so does kwok-ci/k8s, the unofficial
	// macOS builds of kube-apiserver, kube-controller-manager and
	// kube-scheduler that kwokctl downloads on a Mac (tag v1.36.3-kwok.0-darwin-arm64).
	GitHub string
	// GitHubAPI answers /repos/OWNER/REPO/releases/tags/TAG with each asset's
	// sha256 "digest": kwok and kwok-ci/k8s publish no checksum file.
	GitHubAPI string
}

// Official is where the releases really are.
var Official = Upstream{Kube: "https://dl.k8s.io", GitHub: "https://github.com", GitHubAPI: "https://api.github.com"}

// An artifact is one binary to install and where it comes from.
type artifact struct {
	Name    string // the binary, e.g. kube-apiserver
	URL     string // what to download
	Member  string // the binary's path inside the download when that is an archive ("" when it is the binary)
	Sum     sumSource
	Version string // upstream's version of it, for the stamp
	// Unofficial: not the project's own release (kwok-ci/k8s's macOS
	// builds), said so when fetched.
	Unofficial bool
}

// A sumSource says where an artifact's published sha256 is.
type sumSource struct {
	// Exactly one of these.
	File   string // a URL whose body starts with the hex sha256 (Kubernetes' .sha256 files)
	List   string // a URL of "SUM  NAME" lines (etcd's SHA256SUMS); Entry is the NAME
	GitHub string // a GitHub API release URL; Entry is the asset whose digest to read
	Fixed  string // known already (a classroom mirror's index)
	Entry  string
}

func (s sumSource) String() string {
	switch {
	case s.File != "":
		return s.File
	case s.List != "":
		return s.List + " (" + s.Entry + ")"
	case s.GitHub != "":
		return s.GitHub + " (the digest of " + s.Entry + ")"
	default:
		return "the mirror's index"
	}
}

// releaseArtifacts lists, for platform p, where each of names is released.
func (u Upstream) releaseArtifacts(p Platform, names []string) ([]artifact, error) {
	etcdDir := fmt.Sprintf("etcd-%s-%s-%s", EtcdVersion, p.OS(), p.Arch())
	etcdFile := etcdDir + ".tar.gz"
	if p.OS() != "linux" { // etcd releases macOS builds as .zip
		etcdFile = etcdDir + ".zip"
	}
	etcdBase := fmt.Sprintf("%s/etcd-io/etcd/releases/download/%s", strings.TrimSuffix(u.GitHub, "/"), EtcdVersion)
	kwokAsset := fmt.Sprintf("kwok-%s-%s", p.OS(), p.Arch())
	var out []artifact
	for _, n := range names {
		server := n == "kube-apiserver" || n == "kube-controller-manager" || n == "kube-scheduler"
		switch {
		case server && p.OS() != "linux":
			// What kwokctl takes on a Mac: kwok-ci/k8s's builds, one
			// release per version and platform.
			tag := fmt.Sprintf("%s-kwok.0-%s-%s", KubeVersion, p.OS(), p.Arch())
			out = append(out, artifact{Name: n,
				URL: fmt.Sprintf("%s/kwok-ci/k8s/releases/download/%s/%s", strings.TrimSuffix(u.GitHub, "/"), tag, n),
				Sum: sumSource{GitHub: fmt.Sprintf("%s/repos/kwok-ci/k8s/releases/tags/%s", strings.TrimSuffix(u.GitHubAPI, "/"), tag),
					Entry: n}, Version: KubeVersion, Unofficial: true})
		case server || n == "kubectl" || n == "kubelet" || n == "kubeadm":
			url := fmt.Sprintf("%s/release/%s/bin/%s/%s/%s", strings.TrimSuffix(u.Kube, "/"), KubeVersion, p.OS(), p.Arch(), n)
			out = append(out, artifact{Name: n, URL: url, Sum: sumSource{File: url + ".sha256"}, Version: KubeVersion})
		case n == "etcd":
			out = append(out, artifact{Name: n, URL: etcdBase + "/" + etcdFile, Member: etcdDir + "/etcd",
				Sum: sumSource{List: etcdBase + "/SHA256SUMS", Entry: etcdFile}, Version: EtcdVersion})
		case n == "kwok":
			out = append(out, artifact{Name: n,
				URL: fmt.Sprintf("%s/kubernetes-sigs/kwok/releases/download/%s/%s", strings.TrimSuffix(u.GitHub, "/"), KwokVersion, kwokAsset),
				Sum: sumSource{GitHub: fmt.Sprintf("%s/repos/kubernetes-sigs/kwok/releases/tags/%s", strings.TrimSuffix(u.GitHubAPI, "/"), KwokVersion),
					Entry: kwokAsset}, Version: KwokVersion})
		default:
			return nil, fmt.Errorf("no release is known for %q", n)
		}
	}
	return out, nil
}

// releaseStamp is the stamp of a binary installed from its official release:
// its recipe is the release's version, which the build script compares with
// the version it pins (see scripts/build-controlplane.sh).
func releaseStamp(p Platform, version string) Stamp {
	return Stamp{Recipe: "release-" + version, Platform: p, Go: "-", Origin: OriginRelease}
}
