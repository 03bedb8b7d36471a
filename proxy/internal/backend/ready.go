package backend

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// readyTimeout bounds one readiness probe of the backend.
const readyTimeout = 5 * time.Second

// Ready returns a readiness check of the backend: it asks the backend's /readyz over Transport, with the
// credentials the proxy's requests carry of their own (none in pass-through mode). 200 means ready; 401
// and 403 mean the backend answers but does not say (a cluster that withdrew anonymous access), and count
// as ready too. Any other code, or no answer within 5s (or before the probe's request is cancelled), is an
// error naming it.
func (b *Backend) Ready() func(*http.Request) error {
	client := &http.Client{Transport: b.Transport}
	url := strings.TrimSuffix(b.URL.String(), "/") + "/readyz"
	return func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("the backend does not answer: %w", err)
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK, http.StatusUnauthorized, http.StatusForbidden:
			return nil
		}
		return fmt.Errorf("the backend's /readyz answered %s", resp.Status)
	}
}
