package envflag

import (
	"flag"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	env := map[string]string{"GANGBOOST_NUM_ROUND": "7", "GANGBOOST_ETA": "0.5", "GANGBOOST_OBJECTIVE": "reg:squarederror"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	rounds := fs.Int("num-round", 10, "")
	eta := fs.Float64("eta", 0.3, "")
	obj := fs.String("objective", "multi:softprob", "")
	depth := fs.Int("max-depth", 6, "")
	if err := fs.Parse([]string{"--eta", "0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := Fill(fs, Prefixed("GANGBOOST_"), lookup); err != nil {
		t.Fatal(err)
	}
	if *rounds != 7 || *eta != 0.1 || *obj != "reg:squarederror" || *depth != 6 {
		t.Errorf("got rounds %d eta %v objective %q depth %d; want 7 (env), 0.1 (flag wins), reg:squarederror (env), 6 (default)", *rounds, *eta, *obj, *depth)
	}
}

func TestFillRefusedValueNamesTheVariable(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("http_port", 8080, "")
	_ = fs.Parse(nil)
	err := Fill(fs, Upper, func(k string) (string, bool) { return "eighty", k == "HTTP_PORT" })
	if err == nil || !strings.Contains(err.Error(), `HTTP_PORT="eighty"`) {
		t.Errorf("err = %v; want it to name HTTP_PORT and its value", err)
	}
}
