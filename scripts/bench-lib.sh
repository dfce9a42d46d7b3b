# Shared by the bench scripts (sourced): the Python SDK and
# server-everything under $prefix, the release builds they measure, and
# the gateway's config over server-everything as a user would write it.

# Where things are, for a script that set $root (this checkout): its build,
# the bench's installs, the team's shared bench.
target=${CARGO_TARGET_DIR:-"$root/target"}
prefix=${ASKGATE_BENCH_PREFIX:-/tmp/askgate-bench}
peers=${ASKGATE_PEERS:-"$root/../shared/bench"}

# Install the Python SDK and the npm packages under $prefix (once), with
# the team's setup.sh in $peers. Sets $everything, server-everything's
# entry script.
bench_ready() {
    if [ ! -x "$prefix/venv/bin/python" ]; then
        echo "bench: installing the Python SDK and the npm packages under $prefix" >&2
        ASKGATE_BENCH_PREFIX="$prefix" bash "$peers/setup.sh"
    fi
    everything="$prefix/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
}

# Build (release) the gateway and askgate-bare-relay, the floor the stdio
# benches measure it against.
bench_build() {
    cargo build --quiet --release -p askgate -p askgate-conformance \
        --bin askgate --bin askgate-bare-relay
}

# Write to FILE a gateway config over server-everything (stdio) with its
# store in DIR: the echo ruled a read (it needs no person), the inbox on a
# free port.
bench_config() {
    local file=$1 dir=$2
    cat > "$file" <<EOF
store = "sqlite://$dir/store.db"

[[upstreams]]
name = "everything"
command = "node"
args = ["$everything", "stdio"]

[[rules]]
tool = "echo"
risk = "read"

[inbox]
listen = "127.0.0.1:0"
EOF
}
