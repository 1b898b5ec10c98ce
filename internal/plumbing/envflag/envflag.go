// Package envflag fills a command's flags from environment variables, the way container
// platforms configure a process (KServe passes a runtime's settings as env, a pod spec sets env on
// the trainer): a flag given on the command line wins, else its variable, else its default.
package envflag

import (
	"flag"
	"fmt"
	"strings"
)

// Name maps a flag's name to the environment variable that may set it.
type Name func(flagName string) string

// Upper names a flag's variable by its upper-cased name: model_name -> MODEL_NAME (KServe's style).
func Upper(flagName string) string { return strings.ToUpper(flagName) }

// Prefixed names a flag's variable prefix + its name upper-cased with '-' as '_':
// Prefixed("GANGBOOST_")("num-round") is GANGBOOST_NUM_ROUND.
func Prefixed(prefix string) Name {
	return func(flagName string) string {
		return prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
	}
}

// Fill sets every flag of fs not given on the command line (call it after fs.Parse) from its
// variable, read through lookup (os.LookupEnv in a main). A value the flag refuses is an error
// naming the variable, so a bad env fails as clearly as a bad flag.
func Fill(fs *flag.FlagSet, name Name, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		key := name(f.Name)
		v, ok := lookup(key)
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment %s=%q: %w", key, v, e)
		}
	})
	return err
}
