package postgres

// WriteConf rewrites the instance's dbrig.conf with these settings, past
// Start's and Reconfigure's checks, so a test can give the writer a value
// no study may (any name, any quotes) and read back what the server made
// of it after a Restart.
func (i *Instance) WriteConf(settings map[string]string) error { return i.writeConf(settings) }
