package migration

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
)

func TestAcknowledgements(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(renewedAgo time.Duration, duration int32, applied string) coordinationv1.Lease {
		l := coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			RenewTime:            ptr.To(metav1.NewMicroTime(now.Add(-renewedAgo))),
			LeaseDurationSeconds: ptr.To(duration),
		}}
		if applied != "" {
			l.Annotations = map[string]string{serving.AcknowledgedAnnotation: applied}
		}
		return l
	}
	live := func(applied string) coordinationv1.Lease { return lease(time.Second, 40, applied) }
	expired := lease(41*time.Second, 40, "500")
	deleting := lease(time.Hour, 40, "")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	unrenewed := live("500")
	unrenewed.Spec.RenewTime = nil
	noDuration := live("500")
	noDuration.Spec.LeaseDurationSeconds = nil

	for _, tc := range []struct {
		name   string
		leases []coordinationv1.Lease
		want   acks
		done   bool
	}{
		{"none: proxies that do not acknowledge get the grace period", nil, acks{}, false},
		{"one live, acknowledged at the resourceVersion", []coordinationv1.Lease{live("100")}, acks{live: 1, acknowledged: 1}, true},
		{"one live, acknowledged above it", []coordinationv1.Lease{live("1000")}, acks{live: 1, acknowledged: 1}, true},
		{"one live, behind (shorter is lower, not lexical)", []coordinationv1.Lease{live("99")}, acks{live: 1}, false},
		{"one live, nothing applied yet", []coordinationv1.Lease{live("")}, acks{live: 1}, false},
		{"bogus annotations acknowledge nothing", []coordinationv1.Lease{live("1e9"), live("0100"), live("-1"), live(" 100")}, acks{live: 4}, false},
		{"a huge claim does not stand in for another live proxy", []coordinationv1.Lease{live("99999999999999999999"), live("99")}, acks{live: 2, acknowledged: 1}, false},
		{"two live, both acknowledged", []coordinationv1.Lease{live("100"), live("101")}, acks{live: 2, acknowledged: 2}, true},
		{"an expired Lease: a proxy that may still serve", []coordinationv1.Lease{live("100"), expired}, acks{live: 1, acknowledged: 1, expired: 1}, false},
		{"only an expired Lease", []coordinationv1.Lease{expired}, acks{expired: 1}, false},
		{"no renewTime or duration is expired", []coordinationv1.Lease{live("100"), unrenewed, noDuration}, acks{live: 1, acknowledged: 1, expired: 2}, false},
		{"a Lease being deleted counts for nothing", []coordinationv1.Lease{live("100"), deleting}, acks{live: 1, acknowledged: 1}, true},
		{"expiry is renewTime + duration, exclusive", []coordinationv1.Lease{lease(40*time.Second, 40, "100")}, acks{expired: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := acknowledgementsOf(tc.leases, "100", now)
			if got != tc.want || got.done() != tc.done {
				t.Errorf("acknowledgementsOf = %+v (done %v), want %+v (done %v)", got, got.done(), tc.want, tc.done)
			}
			if got.String() == "" {
				t.Error("String() is empty")
			}
		})
	}
}
