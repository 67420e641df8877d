// Package mariadb is dbrig's second engine: MariaDB servers dbrig starts
// for a study ([Instance]) and servers the user already runs ([Target]),
// both behind engine.Engine and engine.Instance, with go-sql-driver/mysql
// as the driver ([Config], [DSN], [Open]).
//
// # Binaries
//
// [FindBinaries] looks for mariadbd and mariadb-install-db on PATH, then in
// /usr/sbin and /usr/bin (Debian 12's MariaDB 10.11), or in the directory
// --mariadb-bin names. Without them the error says how to install them
// (`apt-get install -y mariadb-server` or scripts/install-deps).
//
// # Settings
//
// [Engine.StudySetting] is the rule a study's settings meet when its file
// is read: an option must be on the list of performance settings a study
// may vary; those that decide where the server listens, its files, its
// logins, plugins and logging are dbrig's and refused as such.
// [Engine.CheckSettings] applies it again and asks the installed server,
// before anything starts: a name must be one of the options `mariadbd
// --verbose --help` lists (either spelling, "-" or "_"; a misspelt one is refused with the
// closest valid name), and the values go through mariadbd's own option
// parser (the same command with the settings as arguments): malformed
// numbers, unknown enumeration values and character sets are refused, and
// so is a number the server would clamp. What only a running server knows
// (storage engine names, memory that is not there) fails the start, with
// the end of the server's log.
//
// # Instances
//
// [Engine.StartInstance] makes a directory dbrig-mariadb-<name>-* under the
// base directory, copies this process's template into it (the data
// directory mariadb-install-db --no-defaults made once for these binaries
// and install-time settings, kept in the template cache and in memory:
// template.go), as the
// unprivileged server account when dbrig runs as root (engine.FindServerUser,
// the same account PostgreSQL's servers run as, so that one account, not
// the packaged server's mysql, owns everything dbrig starts), and starts
// mariadbd --no-defaults on 127.0.0.1 at a free port and on a socket in a
// 0700 directory. The logins are made in a bootstrap session of the copy's
// own (mariadbd --bootstrap, the SQL on stdin) from the password's hash:
// dbrig@127.0.0.1 and dbrig@localhost with a random password that is never
// printed, logged or written to disk, are the only ones that log in: no root
// (mariadb-install-db makes one that logs in through the socket without a
// password, and dbrig drops it from every copy), no
// anonymous account. mariadbd is started through engine.StartWith, so it
// inherits its CPU set and cgroup (memory, CPU time) from its first instruction and is
// killed by the kernel if dbrig dies; [RemoveStale] clears the directories
// a killed dbrig leaves. data_dir and wal_dir (innodb_log_group_home_dir)
// put the data and the redo log in directories of dbrig's own elsewhere.
//
// [Instance.Reconfigure] changes dynamic variables with SET GLOBAL and
// restarts the server in place, on the same data, port and socket, for
// anything else.
//
// # Targets
//
// [ParseURI] reads mysql:// and mariadb:// URIs (TCP, unix(/path) or
// ?socket=/path). [AttachTarget] logs in and reads the version; dbrig never
// stops, restarts or reconfigures a target, and makes, replaces and drops
// only databases it marked as its own (a database comment; a marker table
// on servers without database comments).
//
// Tests start real servers through package mariatest.
package mariadb
