package link

import "testing"

// Every profile and modifier gives the Config it gave before the profiles
// were written in the parameters' own words (figures taken from the code
// that set Config's fields directly), so no study's link moved.
func TestProfilesKeepTheirConfigs(t *testing.T) {
	t.Parallel()
	want := map[string]Config{
		"blueridge-dublin":                       {RTT: 84000000, Rate: 1e+09, Window: 16777216},
		"infiniband":                             {RTT: 20000, Rate: 4e+10, Window: 16777216},
		"lan-10g":                                {RTT: 100000, Rate: 1e+10, Window: 16777216},
		"lan-1g":                                 {RTT: 200000, Rate: 1e+09, Window: 16777216},
		"loopback":                               {},
		"lan-2x1g":                               {RTT: 200000, Rate: 1e+09, Window: 16777216, Members: 2},
		"lan-4x1g":                               {RTT: 200000, Rate: 1e+09, Window: 16777216, Members: 4},
		"bond2":                                  {Members: 2},
		"bond4":                                  {Members: 4},
		"lan-10g+bond2":                          {RTT: 100000, Rate: 1e+10, Window: 16777216, Members: 2},
		"quincy-blueridge":                       {RTT: 68000000, Rate: 1e+09, Window: 16777216},
		"quincy-dublin":                          {RTT: 146000000, Rate: 1e+09, Window: 16777216},
		"quincy-santa-clara":                     {RTT: 23000000, Rate: 1e+09, Window: 16777216},
		"santa-clara-blueridge":                  {RTT: 79000000, Rate: 1e+09, Window: 16777216},
		"santa-clara-dublin":                     {RTT: 156000000, Rate: 1e+09, Window: 16777216},
		"tukwila-blueridge":                      {RTT: 77000000, Rate: 1e+09, Window: 16777216},
		"tukwila-dublin":                         {RTT: 150000000, Rate: 1e+09, Window: 16777216},
		"tukwila-quincy":                         {RTT: 4000000, Rate: 1e+09, Window: 16777216},
		"tukwila-santa-clara":                    {RTT: 19000000, Rate: 1e+09, Window: 16777216},
		"autotuned":                              {Window: 16777216},
		"duplex-mismatch":                        {Duplex: Mismatch},
		"half-duplex":                            {Duplex: HalfDuplex},
		"legacy-window":                          {Window: 65535},
		"legacy-stack":                           {Window: 65535, SendBuffer: 8192},
		"dublin-tukwila":                         {RTT: 150000000, Rate: 1e+09, Window: 16777216},
		"blueridge-quincy":                       {RTT: 68000000, Rate: 1e+09, Window: 16777216},
		"rtt-23ms":                               {RTT: 23000000, Rate: 1e+09, Window: 16777216},
		"rtt-0.5ms":                              {RTT: 500000, Rate: 1e+09, Window: 16777216},
		"rtt-1.23456ms":                          {RTT: 1234560, Rate: 1e+09, Window: 16777216},
		"rtt-1000000h":                           {RTT: 3600000000000000000, Rate: 1e+09, Window: 16777216},
		"RTT-77ms":                               {RTT: 77000000, Rate: 1e+09, Window: 16777216},
		"tukwila-dublin+legacy-window":           {RTT: 150000000, Rate: 1e+09, Window: 65535},
		"tukwila-dublin+legacy-window+autotuned": {RTT: 150000000, Rate: 1e+09, Window: 16777216},
		"lan-1g+half-duplex":                     {RTT: 200000, Rate: 1e+09, Window: 16777216, Duplex: HalfDuplex},
		"lan-1g+duplex-mismatch+legacy-window":   {RTT: 200000, Rate: 1e+09, Window: 65535, Duplex: Mismatch},
		" lan-10g + legacy-window ":              {RTT: 100000, Rate: 1e+10, Window: 65535},
	}
	for _, p := range Profiles() {
		if _, ok := want[p.Name]; !ok {
			t.Errorf("profile %q has no Config to compare with: add it to this test", p.Name)
		}
	}
	for expr, w := range want {
		got, err := ParseProfile(expr)
		if err != nil {
			t.Errorf("ParseProfile(%q): %v", expr, err)
			continue
		}
		if got != w {
			t.Errorf("ParseProfile(%q) = %#v, want %#v", expr, got, w)
		}
	}
}
