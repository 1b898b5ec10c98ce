// Command iamuser adds a user with its own access policy to a MinIO server through MinIO's admin
// API, as a platform's object-store setup gives each namespace a key pair limited to its own
// prefixes. s3server builds it beside the server from the same module (it uses the server's own
// admin client, madmin-go).
//
//	iamuser ENDPOINT ROOT_ACCESS_KEY ROOT_SECRET_KEY USER USER_SECRET POLICY_NAME < policy.json
package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/minio/madmin-go/v3"
)

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "iamuser:", err)
		os.Exit(1)
	}
}

func run(args []string, policy io.Reader) error {
	if len(args) != 6 {
		return fmt.Errorf("want ENDPOINT ROOT_ACCESS_KEY ROOT_SECRET_KEY USER USER_SECRET POLICY_NAME, and the policy on stdin")
	}
	u, err := url.Parse(args[0])
	if err != nil || u.Host == "" {
		return fmt.Errorf("endpoint %q: want http(s)://host:port", args[0])
	}
	doc, err := io.ReadAll(io.LimitReader(policy, 1<<20))
	if err != nil {
		return err
	}
	adm, err := madmin.New(u.Host, args[1], args[2], u.Scheme == "https")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := waitIAMLoaded(ctx, adm); err != nil {
		return err
	}
	user, secret, name := args[3], args[4], args[5]
	if err := adm.AddCannedPolicy(ctx, name, doc); err != nil {
		return fmt.Errorf("add policy %s: %w", name, err)
	}
	if err := adm.AddUser(ctx, user, secret); err != nil {
		return fmt.Errorf("add user %s: %w", user, err)
	}
	if _, err := adm.AttachPolicy(ctx, madmin.PolicyAssociationReq{Policies: []string{name}, User: user}); err != nil {
		return fmt.Errorf("attach policy %s to %s: %w", name, user, err)
	}
	return nil
}

// waitIAMLoaded returns once the server's first load of its IAM data (users, policies) from its
// drive is done. A fresh server answers admin calls as soon as its IAM store exists, before that
// load ends, and the first load replaces the in-memory users and policies with what it read
// whatever changed meanwhile (later refreshes skip the swap then: IAMStoreSys.LoadIAMCache), so a
// policy added during it is on the drive but unknown, and attaching it fails with "The canned
// policy does not exist". ListUsers waits for that load (IAMSys.configLoaded); before the store
// exists it fails with "Server not initialized yet", and is asked again.
func waitIAMLoaded(ctx context.Context, adm *madmin.AdminClient) error {
	for {
		_, err := adm.ListUsers(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the server's IAM data to load: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
