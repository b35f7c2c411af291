// Command containerlab is containerlab v0.69.3 built from the Go module proxy.
//
// The lab uses it to validate topology files with containerlab's own strict
// parser (`containerlab graph --dot -t FILE`) and, on hosts where containerlab
// can deploy, as the clab runtime. The body mirrors upstream's main.go, plus
// two lab-specific guards:
//
//   - the background "is there a newer release" check (an HTTP request to
//     GitHub) is always disabled: the lab never sends traffic off the host;
//   - with DNSLAB_CLAB_STUB_ENGINE=1 the process answers the one Docker API
//     call that topology parsing makes (GET /version, from runtime init) with
//     an in-process stub on a private unix socket, so `graph --dot` validates
//     a topology on hosts without a Docker engine. Anything else (deploy,
//     inspect) fails against the stub, as it should.
package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/charmbracelet/fang"
	"github.com/srl-labs/containerlab/cmd"
)

// stubEngineVersion is what the stub reports; containerlab only parses it as semver.
const stubEngineVersion = "20.10.24"

func startStubEngine() (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "dnslab-clab-stub-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("API-Version", "1.41")
		_, _ = w.Write([]byte("OK"))
	})
	version := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"Version": stubEngineVersion, "ApiVersion": "1.41", "Os": "linux",
		})
	}
	mux.HandleFunc("/version", version)
	mux.HandleFunc("/v1.41/version", version)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "dnslab stub engine: "+r.URL.Path+" is not implemented (parse-only mode)",
			http.StatusNotImplemented)
	})
	go func() { _ = http.Serve(ln, mux) }()
	os.Setenv("DOCKER_HOST", "unix://"+sock)
	os.Unsetenv("DOCKER_TLS_VERIFY")
	os.Unsetenv("DOCKER_CERT_PATH")
	return func() { ln.Close(); os.RemoveAll(dir) }, nil
}

func main() {
	os.Exit(run())
}

func run() int {
	os.Setenv("CLAB_VERSION_CHECK", "disable")

	if os.Getenv("DNSLAB_CLAB_STUB_ENGINE") == "1" {
		cleanup, err := startStubEngine()
		if err != nil {
			os.Stderr.WriteString("dnslab stub engine: " + err.Error() + "\n")
			return 1
		}
		defer cleanup()
	}

	ctx, cancel := cmd.SignalHandledContext()
	defer cancel()

	cmd.RootCmd.SetContext(ctx)

	if err := fang.Execute(ctx, cmd.RootCmd, fang.WithoutVersion()); err != nil {
		return 1
	}
	return 0
}
