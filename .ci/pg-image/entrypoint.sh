#!/bin/bash
# Entrypoint for local/postgres:15. It mimics what testcontainers-go expects
# from the official image: POSTGRES_USER/PASSWORD/DB are honoured, password
# logins over TCP, and the server logs "ready to accept connections" twice
# (once for the set-up run, once for the real one).
set -euo pipefail

# Callers pass "postgres -c ...": the first word names the program, which we
# run ourselves.
if [ "${1:-}" = postgres ]; then
	shift
fi

: "${PGDATA:=/var/lib/postgresql/data}"
sockdir=/var/run/postgresql

if [ "$(id -u)" = 0 ]; then
	# The server refuses to run as root: prepare its directories, then run
	# this script again as postgres.
	mkdir -p "$PGDATA" "$sockdir"
	chown -R postgres:postgres "$PGDATA" "$sockdir"
	chmod 0700 "$PGDATA"
	chmod 2775 "$sockdir"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "entrypoint: POSTGRES_PASSWORD must be set" >&2
		exit 1
	fi

	# The password goes through a file so it never shows in a process list.
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=scram-sha-256 --no-sync
	rm -f "$pwfile"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"

	# Set-up run on the socket only, so nobody connects before the database
	# exists.
	pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k $sockdir" start
	if [ "$db" != postgres ]; then
		# Double quotes inside the name are doubled, as SQL wants.
		psql -v ON_ERROR_STOP=1 -h "$sockdir" -U "$user" -d postgres \
			-c "CREATE DATABASE \"${db//\"/\"\"}\""
	fi
	pg_ctl -D "$PGDATA" -m fast -w stop
fi

exec postgres -D "$PGDATA" -k "$sockdir" -c listen_addresses='*' "$@"
