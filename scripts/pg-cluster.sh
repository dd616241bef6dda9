# Sourced by the PostgreSQL tiers (scripts/pg-tier.sh, scripts/hosts-torture.sh): a
# throw-away cluster of Debian's `postgresql` (installed with apt-get when missing) in a
# temp dir, with its own Unix socket and no TCP listener. `pg_cluster_start PORT` makes and
# starts it, sets PG_BIN, PG_WORK and PG_URL (the `mediadex_test` database), and stops and
# removes it on exit; `pg_cluster_restart` restarts the server in place (fast shutdown).
# Run as root (CI): initdb and pg_ctl run as the `postgres` user, which the package makes.

pg_die() { echo "pg-cluster: $*" >&2; exit 1; }

pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

pg_install() {
    [ -n "$(pg_bindir)" ] && [ -x "$(pg_bindir)/initdb" ] && return 0
    command -v apt-get >/dev/null || pg_die "no PostgreSQL and no apt-get to install it"
    echo "pg-cluster: installing Debian's postgresql"
    apt-get update -qq >/dev/null
    # The package's own cluster is not wanted, and starting its service fails where there
    # is no init system (a CI container): invoke-rc.d is told not to start it, for the
    # install only.
    local policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
        || { [ -z "$policy" ] || rm -f "$policy"; pg_die "apt-get install postgresql failed"; }
    [ -z "$policy" ] || rm -f "$policy"
}

pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

pg_cluster_stop() {
    pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_WORK/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_WORK"
}

pg_cluster_start() {
    local port="$1"
    pg_install
    PG_BIN="$(pg_bindir)"
    [ -x "$PG_BIN/initdb" ] || pg_die "no initdb under /usr/lib/postgresql/*/bin"
    PG_WORK="$(mktemp -d)"
    trap pg_cluster_stop EXIT
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || pg_die "no postgres user (the postgresql package makes it)"
        chown postgres "$PG_WORK"
    fi
    local start
    start=$(date +%s)
    pg_as_owner "$PG_BIN/initdb" -D "$PG_WORK/data" -A trust -U postgres -E UTF8 \
        --locale=C.UTF-8 >"$PG_WORK/initdb.log" 2>&1 \
        || { cat "$PG_WORK/initdb.log" >&2; pg_die "initdb failed"; }
    # fsync off: a throw-away cluster; the tests' durability is SQLite's, not this server's.
    pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_WORK/data" -l "$PG_WORK/server.log" -w -t 60 \
        -o "-p $port -k $PG_WORK -c listen_addresses= -c fsync=off -c max_connections=200" \
        start >/dev/null || { cat "$PG_WORK/server.log" >&2; pg_die "the server did not start"; }
    "$PG_BIN/createdb" -h "$PG_WORK" -p "$port" -U postgres mediadex_test
    PG_URL="host=$PG_WORK port=$port user=postgres dbname=mediadex_test"
    echo "pg-cluster: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') up in" \
        "$(( $(date +%s) - start )) s"
}

# The command that restarts the server in place (its options kept), for a child to run.
pg_cluster_restart_command() {
    local pg_ctl="$PG_BIN/pg_ctl -D $PG_WORK/data -l $PG_WORK/server.log -m fast -w -t 60 restart"
    if [ "$(id -u)" = 0 ]; then
        echo "cd / && runuser -u postgres -- $pg_ctl >/dev/null"
    else
        echo "$pg_ctl >/dev/null"
    fi
}
