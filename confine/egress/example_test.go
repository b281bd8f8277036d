package egress_test

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/confine/egress"
)

func ExampleParseRule() {
	for _, s := range []string{"Packages.Example.", "*.registry.example:443", "[::1]:9000", "*.*.com"} {
		r, err := egress.ParseRule(s)
		fmt.Printf("%q %v\n", r.String(), err)
	}
	// Output:
	// "packages.example" <nil>
	// "*.registry.example:443" <nil>
	// "[::1]:9000" <nil>
	// "" egress: bad rule "*.*.com": domain "*.com" has '*'; a wildcard is allowed only as a leading "*."
}

func ExampleProxy_Check() {
	ctx := context.Background()
	allow, _ := egress.ParseRules([]string{"*.registry.example:443"})
	p, err := egress.Start(ctx, egress.Options{Allow: allow})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	for _, host := range []string{"pkg.registry.example", "registry.example"} {
		verdict, reason := p.Check(ctx, host, 443)
		if reason != "" {
			reason = ": " + reason
		}
		fmt.Printf("%s %v%s\n", host, verdict, reason)
	}
	// Output:
	// pkg.registry.example allow
	// registry.example deny: not on the allow-list; add it under sandbox.network.allow
}
