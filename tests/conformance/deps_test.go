package conformance

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// sdkClients matches cloud SDK client packages. The provider API packages import some SDK type packages
// (CAPA: aws-sdk-go-v2/service/{ec2,eks}/types; CAPG: GKE's containerpb messages; CAPIBM: IBM's
// vpc-go-sdk/vpcv1, for constant values; CAPO: the gophercloud/v2 root package), and the proxy may carry
// exactly those; a client package, which talks to a cloud, must never reach it.
var sdkClients = regexp.MustCompile(`^(` + strings.Join([]string{
	`github\.com/aws/aws-sdk-go-v2/service/[a-z0-9]+`, // service clients; .../types stays allowed
	`github\.com/aws/aws-sdk-go-v2/config`,
	`github\.com/Azure/azure-sdk-for-go/.*`,
	`github\.com/vmware/govmomi(/.*)?`,
	`github\.com/vmware-tanzu/vm-operator/.*`,
	`github\.com/gophercloud/gophercloud/v2/openstack(/.*)?`,
	`cloud\.google\.com/go/container/apiv1`, // the GKE client; apiv1/containerpb stays allowed
	`cloud\.google\.com/go/compute(/.*)?`,
	`google\.golang\.org/api/.*`,
	`kubevirt\.io/client-go(/.*)?`,
	`github\.com/IBM/platform-services-go-sdk/.*`,
}, "|") + `)$`)

// TestProxyCarriesNoSDKClients checks that importing the provider API packages drags no cloud SDK client
// into the proxy binary beyond what those packages import themselves.
func TestProxyCarriesNoSDKClients(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../proxy").Output()
	if err != nil {
		t.Fatalf("go list -deps ./proxy: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if sdkClients.MatchString(pkg) {
			t.Errorf("the proxy imports cloud SDK client package %s", pkg)
		}
	}
}
