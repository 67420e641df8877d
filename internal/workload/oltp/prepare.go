package oltp

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// admin is a connection that makes the schema and loads the data.
type admin interface {
	exec(ctx context.Context, sql ...string) error
	// load streams tab-separated rows into a table.
	load(ctx context.Context, table string, rows io.Reader) (int64, error)
	// queryInt runs a query that returns one whole number.
	queryInt(ctx context.Context, q string) (int64, error)
	// queryText runs a query that returns one text value.
	queryText(ctx context.Context, q string) (string, error)
	close()
}

func openAdmin(ctx context.Context, login engine.Conn) (admin, error) {
	switch login.Engine {
	case postgres.Name:
		cfg, err := postgres.ConnInfoOf(login).ConnConfig()
		if err != nil {
			return nil, err
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", login, err)
		}
		return &pgAdmin{conn: conn}, nil
	case mariadb.Name:
		db, err := mariadb.Open(ctx, login)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		return &mariaAdmin{db: db}, nil
	}
	return nil, fmt.Errorf("the oltp workload has no %s dialect", login.Engine)
}

func dialectOf(engineName string) (dialect, error) {
	switch engineName {
	case postgres.Name:
		return pgDialect, nil
	case mariadb.Name:
		return mariaDialect, nil
	}
	return dialect{}, fmt.Errorf("the oltp workload has no %s dialect", engineName)
}

type pgAdmin struct{ conn *pgx.Conn }

func (a *pgAdmin) exec(ctx context.Context, sql ...string) error {
	for _, q := range sql {
		if _, err := a.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstWords(q), err)
		}
	}
	return nil
}

func (a *pgAdmin) load(ctx context.Context, table string, rows io.Reader) (int64, error) {
	tag, err := a.conn.PgConn().CopyFrom(ctx, rows, "COPY "+table+" FROM STDIN")
	return tag.RowsAffected(), err
}

func (a *pgAdmin) queryInt(ctx context.Context, q string) (int64, error) {
	var n int64
	err := a.conn.QueryRow(ctx, q).Scan(&n)
	return n, err
}

func (a *pgAdmin) queryText(ctx context.Context, q string) (string, error) {
	var s string
	err := a.conn.QueryRow(ctx, q).Scan(&s)
	return s, err
}

func (a *pgAdmin) close() { a.conn.Close(context.Background()) }

type mariaAdmin struct{ db *sql.DB }

func (a *mariaAdmin) exec(ctx context.Context, sql ...string) error {
	for _, q := range sql {
		if _, err := a.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstWords(q), err)
		}
	}
	return nil
}

var readerSeq atomic.Int64

// load streams the rows through LOAD DATA LOCAL INFILE, the driver reading
// them from a registered reader rather than a file.
func (a *mariaAdmin) load(ctx context.Context, table string, rows io.Reader) (int64, error) {
	name := fmt.Sprintf("oltp-%s-%d", table, readerSeq.Add(1))
	mysql.RegisterReaderHandler(name, func() io.Reader { return rows })
	defer mysql.DeregisterReaderHandler(name)
	res, err := a.db.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE "+table+" CHARACTER SET utf8mb4")
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (a *mariaAdmin) queryInt(ctx context.Context, q string) (int64, error) {
	var n int64
	err := a.db.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

func (a *mariaAdmin) queryText(ctx context.Context, q string) (string, error) {
	var s string
	err := a.db.QueryRowContext(ctx, q).Scan(&s)
	return s, err
}

func (a *mariaAdmin) close() { a.db.Close() }

func firstWords(q string) string {
	if len(q) > 60 {
		return q[:60] + "..."
	}
	return q
}

// createSchema makes the tables, loads every table from the generator,
// builds the indexes and gathers statistics. progress counts tables.
func createSchema(ctx context.Context, a admin, engineName string, sf float64, progress func(done, total int64)) error {
	d, err := dialectOf(engineName)
	if err != nil {
		return err
	}
	if err := a.exec(ctx, d.createTables()...); err != nil {
		return fmt.Errorf("create the tables: %w", err)
	}
	sizes := SizesAt(sf)
	g := newGenerator(sizes)
	for i, table := range Tables {
		if err := loadTable(ctx, a, g, table); err != nil {
			return err
		}
		if progress != nil {
			progress(int64(i+1), int64(len(Tables)))
		}
	}
	if err := a.exec(ctx, indexes...); err != nil {
		return fmt.Errorf("create the indexes: %w", err)
	}
	var after []string
	switch engineName {
	case postgres.Name:
		// Orders placed during the run take ids after the loaded ones.
		after = append(after, "SELECT setval(pg_get_serial_sequence('orders', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM orders), false)")
		after = append(after, "VACUUM ANALYZE")
	case mariadb.Name:
		after = append(after, "ANALYZE TABLE "+strings.Join(Tables, ", "))
	}
	after = append(after, fmt.Sprintf("INSERT INTO %s VALUES (%d, '%s', %d, %d)", infoTable, dataVersion, formatScale(sf), sizes.Customers, sizes.Items))
	return a.exec(ctx, after...)
}

// loadTable streams one table from the generator into the database.
func loadTable(ctx context.Context, a admin, g *generator, table string) error {
	if table == "carts" {
		return nil // carts start empty
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(g.write(table, pw)) }() // ends when the load stops reading (pr.Close below)
	_, err := a.load(ctx, table, pr)
	pr.Close()
	if err != nil {
		return fmt.Errorf("load table %s: %w", table, err)
	}
	return nil
}

// dataScale reads the scale the data in the database was made at, and
// checks its version.
func dataScale(ctx context.Context, a admin) (string, error) {
	v, err := a.queryInt(ctx, "SELECT version FROM "+infoTable)
	if err != nil {
		return "", fmt.Errorf("read the data's description (%s): %w; the database holds no data of this workload", infoTable, err)
	}
	if v != dataVersion {
		return "", fmt.Errorf("the data was made by another version of the workload (%d, this is %d): prepare it again", v, dataVersion)
	}
	return a.queryText(ctx, "SELECT scale_factor FROM "+infoTable)
}

// formatScale writes a scale factor as the data records it.
func formatScale(sf float64) string { return strconv.FormatFloat(sf, 'g', -1, 64) }

// LoadRole is the login, without superuser rights, that the workload's
// users take on a PostgreSQL server dbrig runs: PostgreSQL keeps
// superuser_reserved_connections of its connection slots for superusers,
// so when the users take every other slot, dbrig's monitoring connection
// (a superuser's) still gets in.
const LoadRole = "dbrig_load"

// makeLoadRole creates LoadRole with the password of dbrig's own login
// (the instance's random one, given to the server as a SCRAM verifier, so
// the password itself is never sent in SQL) and lets it read and write the
// workload's tables.
func makeLoadRole(ctx context.Context, a admin, password string) error {
	exists, err := a.queryInt(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = '"+LoadRole+"'")
	if err != nil {
		return err
	}
	verifier, err := scramVerifier(password)
	if err != nil {
		return err
	}
	stmt := "CREATE ROLE " + LoadRole + " LOGIN NOSUPERUSER PASSWORD '" + verifier + "'"
	if exists > 0 {
		stmt = "ALTER ROLE " + LoadRole + " LOGIN NOSUPERUSER PASSWORD '" + verifier + "'"
	}
	return a.exec(ctx, stmt,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "+LoadRole,
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO "+LoadRole)
}

// scramVerifier is PostgreSQL's stored form of a SCRAM-SHA-256 password
// (RFC 5802, 7677): SCRAM-SHA-256$iterations:salt$StoredKey:ServerKey.
func scramVerifier(password string) (string, error) {
	const iterations = 4096
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac(salted, "Server Key"))), nil
}

// isSuperuser reports whether a PostgreSQL session's user is a superuser.
func isSuperuser(ctx context.Context, a admin) (bool, error) {
	s, err := a.queryText(ctx, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user")
	return s == "true", err
}

// tooManyConnections reports whether a server refused a connection because
// every connection slot was taken.
func tooManyConnections(err error) bool {
	var my *mysql.MySQLError
	if errors.As(err, &my) && my.Number == 1040 {
		return true
	}
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "53300" {
		return true
	}
	return false
}
