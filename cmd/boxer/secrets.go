package main

import (
	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/secrets"
	"github.com/urfave/cli/v2"
)

// secretUsage is what --secret takes, for run, serve and mcp.
const secretUsage = "a secret the program reads in /run/secrets/`NAME` (memory only, never in the container's spec or on disk), " +
	"from boxer's environment variable NAME, NAME=file:PATH or NAME=cmd:COMMAND ARGS (a secret manager's CLI, run without a shell). " +
	"Add ,env for a variable NAME too: then every process in the sandbox can read it in /proc/*/environ (repeatable)"

// injectUsage is what --inject takes.
const injectUsage = "`HOST:HEADER=TEMPLATE`: the egress proxy sets HEADER on HTTPS requests to HOST, e.g. " +
	"'api.example.com:Authorization=Bearer {{secret:API_KEY}}'; the secrets it names never enter the sandbox (repeatable; --allow-host must reach HOST)"

// runSecretFlags are run's secret flags.
func runSecretFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "secret", Usage: secretUsage},
		&cli.StringSliceFlag{Name: "inject", Usage: injectUsage},
	}
}

// operatorSecretFlags are serve's and mcp's: the secrets requests may name.
func operatorSecretFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "secret", Usage: "hold a secret requests may name in \"secrets\": `NAME[=SOURCE]`, NAME from boxer's environment, NAME=file:PATH or NAME=cmd:COMMAND ARGS, read once at start (repeatable)"},
		&cli.StringFlag{Name: "secrets-dir", Usage: "hold each file of `DIR` as a secret named after it (a Kubernetes secret volume works)"},
		&cli.StringSliceFlag{Name: "inject", Usage: injectUsage + "; a request that names every secret of the template gets it"},
	}
}

// secretSet is what a command's secret flags give the runner.
type secretSet struct {
	store  *secrets.Store
	inject []secrets.Injection
	// refs are run's Request.Secrets: the names, with ,env.
	refs []string
}

// options hands the set to the runner.
func (s secretSet) options(o *runner.Options) {
	o.Secrets, o.Inject = s.store, s.inject
}

// loadSecrets reads the --secret (and --secrets-dir) values and checks
// --inject: every failure is one line naming the flag, before anything
// runs.
func loadSecrets(c *cli.Context) (secretSet, error) {
	var set secretSet
	var list []secrets.Named
	for _, text := range c.StringSlice("secret") {
		spec, err := secrets.ParseSpec(text)
		if err != nil {
			return set, fail("--secret: %v", err)
		}
		value, err := spec.Load(c.Context)
		if err != nil {
			if c.Context.Err() != nil {
				return set, &exitError{code: interruptedCode(), msg: "interrupted"}
			}
			return set, fail("--secret: %v", err)
		}
		list = append(list, secrets.Named{Name: spec.Name, Value: value})
		ref := spec.Name
		if spec.Env {
			ref += ",env"
		}
		set.refs = append(set.refs, ref)
	}
	if dir := c.String("secrets-dir"); dir != "" {
		more, err := secrets.LoadDir(dir)
		if err != nil {
			return set, fail("--secrets-dir: %v", err)
		}
		list = append(list, more...)
	}
	var err error
	if set.store, err = secrets.NewStore(list); err != nil {
		return set, fail("--secret: %v", err)
	}
	for _, text := range c.StringSlice("inject") {
		rule, err := secrets.ParseInjection(text)
		if err != nil {
			return set, fail("--inject: %v", err)
		}
		for _, name := range rule.Template.Names() {
			if _, ok := set.store.Lookup(name); !ok {
				return set, fail("--inject %s: the template names %s: give it with --secret %s", rule.Host, name, name)
			}
		}
		set.inject = append(set.inject, rule)
	}
	return set, nil
}

// checkInjectHosts refuses a run whose --inject host --allow-host does not
// reach, in the CLI's words (the runner refuses it too, in the request's).
func checkInjectHosts(set secretSet, req runner.Request) error {
	policy, err := egress.ParsePolicy(req.AllowHosts)
	if err != nil {
		return fail("--allow-host: %v", err)
	}
	for _, rule := range set.inject {
		if !policy.NameKnown(rule.Host) {
			return fail("--inject %s: the run cannot reach %s: add --allow-host %s", rule.Host, rule.Host, rule.Host)
		}
	}
	return nil
}
