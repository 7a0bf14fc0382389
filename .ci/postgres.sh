#!/usr/bin/env bash
# Sourced by .ci/run: PostgreSQL and nginx for the Hub's `postgres` test project (issue 14).
# Installs Debian's postgresql and nginx when missing, starts a throwaway cluster in a temp
# dir as an unprivileged user on a free loopback port, exports its admin URL as
# OH_HAI_TEST_DATABASE_URL, and stops and removes it when the calling shell exits. The
# tests never touch a system-wide cluster.
ci_pg_install() {
  local missing=()
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing+=(postgresql)
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
  [ ${#missing[@]} -eq 0 ] && return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    # policy-rc.d keeps the packages' own services from starting: the tests start their own.
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } \
      || echo ".ci/postgres.sh: could not install Debian's ${missing[*]}; the PostgreSQL Hub tests will fail on CI"
  else
    echo ".ci/postgres.sh: no apt-get as root here to install ${missing[*]}"
  fi
}

ci_pg_start() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$bin" ] || bin=$(dirname "$(command -v initdb)")
  CI_PG_DIR=$(mktemp -d /tmp/oh-hai-ci-pg.XXXXXX)
  local run=()
  if [ "$(id -u)" = 0 ]; then
    # initdb refuses root.
    local user=postgres
    id -u "$user" >/dev/null 2>&1 || user=nobody
    chown "$user" "$CI_PG_DIR"
    run=(runuser -u "$user" --)
  fi
  chmod 700 "$CI_PG_DIR"
  local password port
  password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  # A port below the kernel's ephemeral range: a listen(0) port closed again could be taken as a connect()'s local port
  # while initdb runs, and no connect() ever draws one outside the range (test/helpers/ports.ts, docs/node-lines.md).
  port=$(node -e '
    const net = require("net");
    let low = 32768;
    try { low = Number(require("fs").readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || low; } catch {}
    const draw = (tries) => {
      const port = low > 10024 && tries > 0 ? 10000 + Math.floor(Math.random() * (low - 10000)) : 0;
      const s = net.createServer().once("error", () => draw(tries - 1));
      s.listen(port, "127.0.0.1", () => { console.log(s.address().port); s.close(); });
    };
    draw(20);')
  (umask 077 && printf '%s\n' "$password" >"$CI_PG_DIR/pw")
  [ "$(id -u)" = 0 ] && chown "$(stat -c %U "$CI_PG_DIR")" "$CI_PG_DIR/pw"
  "${run[@]}" "$bin/initdb" -D "$CI_PG_DIR/data" -U oh_hai --auth=scram-sha-256 --pwfile="$CI_PG_DIR/pw" -E UTF8 --no-sync >/dev/null
  rm -f "$CI_PG_DIR/pw"
  "${run[@]}" "$bin/pg_ctl" -D "$CI_PG_DIR/data" -l "$CI_PG_DIR/log" -w \
    -o "-h 127.0.0.1 -p $port -k $CI_PG_DIR -c fsync=off -c full_page_writes=off -c max_connections=300" start >/dev/null
  CI_PG_STOP=("${run[@]}" "$bin/pg_ctl" -D "$CI_PG_DIR/data" -m fast stop)
  export OH_HAI_TEST_DATABASE_URL="postgres://oh_hai:${password}@127.0.0.1:${port}/postgres"
  echo ".ci/postgres.sh: a throwaway PostgreSQL ($("$bin/postgres" --version)) on 127.0.0.1:$port"
}

ci_pg_stop() {
  [ -n "${CI_PG_DIR:-}" ] || return 0
  "${CI_PG_STOP[@]}" >/dev/null 2>&1 || true
  rm -rf "$CI_PG_DIR"
  CI_PG_DIR=
}

ci_pg_install
ci_pg_start
trap ci_pg_stop EXIT
