#!/bin/bash
# Entrypoint for local/postgres:15. It mimics what testcontainers-go expects
# from the official image: POSTGRES_USER/PASSWORD/DB are honoured, password
# logins over TCP, and the server logs "ready to accept connections" twice
# (once for the set-up run, once for the real one).
#
# "entrypoint.sh preset", run once when the image is built with PRESET set
# to "USER DB", makes the cluster a start for that user and database would
# make, less the password (see the Dockerfile).
set -euo pipefail

# Callers pass "postgres -c ...": the first word names the program, which we
# run ourselves.
if [ "${1:-}" = postgres ]; then
	shift
fi

: "${PGDATA:=/var/lib/postgresql/data}"
sockdir=/var/run/postgresql
# preset names the user and database of a cluster made in advance.
preset=/var/lib/postgresql/preset

if [ "$(id -u)" = 0 ]; then
	# The server refuses to run as root: prepare its directories, then run
	# this script again as postgres.
	mkdir -p "$PGDATA" "$sockdir"
	# A cluster made in advance is postgres's already: chown would copy
	# every file of it up from the image's layer.
	if [ "$(stat -c %U "$PGDATA")" != postgres ]; then
		chown -R postgres:postgres "$PGDATA"
	fi
	chown postgres:postgres "$sockdir"
	chmod 0700 "$PGDATA"
	chmod 2775 "$sockdir"
	if [ "${1:-}" = preset ]; then
		touch "$preset"
		chown postgres:postgres "$preset"
	fi
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

# setup_run starts the server on the socket only, so nobody connects before
# the set-up is done.
setup_run() {
	pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k $sockdir" start
}

# create_db USER DB makes database DB unless it is postgres.
create_db() {
	if [ "$2" != postgres ]; then
		# Double quotes inside the name are doubled, as SQL wants.
		psql -v ON_ERROR_STOP=1 -h "$sockdir" -U "$1" -d postgres \
			-c "CREATE DATABASE \"${2//\"/\"\"}\""
	fi
}

# make_cluster USER [PWFILE] runs initdb for USER, with the password in
# PWFILE when given.
make_cluster() {
	initdb -D "$PGDATA" -U "$1" ${2:+--pwfile="$2"} -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=scram-sha-256 --no-sync
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
}

if [ "${1:-}" = preset ]; then
	read -r user db <<<"$PRESET"
	make_cluster "$user"
	setup_run
	create_db "$user" "$db"
	pg_ctl -D "$PGDATA" -m fast -w stop
	echo "$user $db" >"$preset"
	exit 0
fi

user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ -s "$preset" ]; then
	if [ "$(cat "$preset")" = "$user $db" ]; then
		if [ -z "${POSTGRES_PASSWORD:-}" ]; then
			echo "entrypoint: POSTGRES_PASSWORD must be set" >&2
			exit 1
		fi
		setup_run
		# psql reads the password from the environment itself (\getenv),
		# so it is on no command line.
		psql -v ON_ERROR_STOP=1 -q -h "$sockdir" -U "$user" -d postgres <<-'SQL'
			\getenv pw POSTGRES_PASSWORD
			ALTER ROLE CURRENT_USER PASSWORD :'pw';
		SQL
		pg_ctl -D "$PGDATA" -m fast -w stop
	else
		# Made for another user or database: start as if it were not there.
		find "$PGDATA" -mindepth 1 -delete
	fi
	: >"$preset"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "entrypoint: POSTGRES_PASSWORD must be set" >&2
		exit 1
	fi

	# The password goes through a file so it never shows in a process list.
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	make_cluster "$user" "$pwfile"
	rm -f "$pwfile"
	setup_run
	create_db "$user" "$db"
	pg_ctl -D "$PGDATA" -m fast -w stop
fi

exec postgres -D "$PGDATA" -k "$sockdir" -c listen_addresses='*' "$@"
