package link

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// Flags are a link's settings as a command line gives them: a profile to
// start from and one flag per parameter of [Params], which override it.
// A command gets them all with one call to [AddFlags].
type Flags struct {
	fs          *pflag.FlagSet
	profileFlag string
	profile     string
}

// AddFlags registers on fs a flag named profileFlag (with profileUsage)
// that takes a profile expression, then a flag for every parameter. The
// values stay as written until [Flags.Config] reads them, so that every
// problem is reported at once, each naming its flag.
func AddFlags(fs *pflag.FlagSet, profileFlag, profileUsage string) *Flags {
	f := &Flags{fs: fs, profileFlag: profileFlag}
	fs.StringVar(&f.profile, profileFlag, "", profileUsage)
	for _, p := range params {
		fs.Var(&textValue{kind: p.flagType}, p.Name, p.Doc)
	}
	return f
}

// Given reports whether the command line set the profile or any parameter.
func (f *Flags) Given() bool {
	if f.fs.Changed(f.profileFlag) {
		return true
	}
	for _, p := range params {
		if f.fs.Changed(p.Name) {
			return true
		}
	}
	return false
}

// Config reads the profile, then every parameter flag given over it. Every
// problem is returned, each naming its flag: a value of the profile that is
// beyond its bound names the profile's flag.
func (f *Flags) Config() (Config, error) {
	var base Config
	var errs []error
	if f.profile != "" {
		c, err := ParseProfile(f.profile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.profileFlag, err))
		}
		base = c
	}
	written := map[string]string{}
	for _, p := range params {
		if fl := f.fs.Lookup(p.Name); fl.Changed {
			written[p.Name] = fl.Value.String()
		}
	}
	flagName := func(name string) string { return "--" + name }
	c, readErrs := readText(base, written, flagName)
	errs = append(errs, readErrs...)
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	for _, err := range checkRead(c, written, flagName) {
		var pe *ParamError
		if errors.As(err, &pe) && pe.FromBase {
			err = fmt.Errorf("--%s: %w", f.profileFlag, err)
		}
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// textValue holds a flag's value as written.
type textValue struct {
	text string
	kind string // the type --help shows when the usage names no placeholder
}

func (v *textValue) String() string     { return v.text }
func (v *textValue) Set(s string) error { v.text = s; return nil }
func (v *textValue) Type() string       { return v.kind }
