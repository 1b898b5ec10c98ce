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
