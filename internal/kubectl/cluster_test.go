/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubectl

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeconfigFor writes a kubeconfig whose context "lab" names server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: me
  user: {token: secret}
contexts:
- name: lab
  context: {cluster: lab, user: me}
current-context: lab
`, server)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiserver answers /version with status.
func apiserver(t *testing.T, status int) string {
	t.Helper()
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusOK {
			_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"v1.35.0"}`))
			return
		}
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, http.StatusText(status), status)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func TestConnectSaysWhatItTried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "https://" + l.Addr().String()
	_ = l.Close()
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	for _, tc := range []struct {
		name, kubeconfig, context string
		says                      []string // empty: connected
	}{
		{name: "a cluster that answers", kubeconfig: kubeconfigFor(t, apiserver(t, http.StatusOK))},
		{name: "a cluster that hides /version", kubeconfig: kubeconfigFor(t, apiserver(t, http.StatusForbidden))},
		{name: "nothing listens", kubeconfig: kubeconfigFor(t, refused),
			says: []string{"cannot reach the cluster at " + refused + " (context lab of ", "connection refused", "--kubeconfig or --context"}},
		{name: "credentials refused", kubeconfig: kubeconfigFor(t, apiserver(t, http.StatusUnauthorized)),
			says: []string{"refused your credentials", "log in again"}},
		{name: "no such kubeconfig", kubeconfig: "/nonexistent/config",
			says: []string{"no cluster to talk to", "tried --kubeconfig /nonexistent/config (absent)"}},
		{name: "no such context", kubeconfig: kubeconfigFor(t, refused), context: "prod",
			says: []string{`context "prod" does not exist`, "a context with --context"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Connect(tc.kubeconfig, tc.context)
			if len(tc.says) == 0 {
				if err != nil || cfg == nil {
					t.Fatalf("Connect: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
