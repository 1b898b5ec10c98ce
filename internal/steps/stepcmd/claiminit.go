package stepcmd

import (
	"flag"
	"fmt"
	"os"

	"github.com/gangboost/gangboost/internal/contract/claim"
)

// Tools are the binary's commands that are no pipeline component.
var Tools = map[string]func(args []string) int{
	"claim-init": ClaimInit,
}

// ClaimInit is `gangboost-components claim-init`: run once as root where the claim is mounted
// (manifests/claim-init.yaml's Job), it makes the claim writable for the steps and pods that run
// as the images' user, on storage classes that hand out a root-owned volume and ignore fsGroup.
func ClaimInit(args []string) int {
	fs := flag.NewFlagSet("claim-init", flag.ContinueOnError)
	root := fs.String("claim", "/mnt/pvc", "where the claim is mounted")
	uid := fs.Int("uid", claim.ImageUID, "user the steps and pods run as")
	gid := fs.Int("gid", claim.ImageGID, "group the steps and pods run as (fs_group)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	done, err := claim.Init(*root, *uid, *gid)
	for _, d := range done {
		fmt.Printf("%s: owner %d:%d, mode 2775\n", d, *uid, *gid)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "claim-init:", err)
		return 1
	}
	return 0
}
