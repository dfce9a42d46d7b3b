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

# The config bench_config writes, made for confirmed calls: echo a
# medium_write, and an instant accept taken for a person's
# (min_answer_ms = 0), so a client that accepts at once confirms each call.
bench_confirm_config() {
    bench_config "$1" "$2"
    sed -i 's/^risk = "read"$/risk = "medium_write"/' "$1"
    sed -i '1i min_answer_ms = 0' "$1"
}

# The HTTP peers issue 19 names besides the npm ones, installed once under
# $prefix: the Rust `mcp-proxy` 0.6.0 (tower-mcp; `cargo install`, a few
# minutes the first time) and IBM's ContextForge `mcpgateway.translate`
# (PyPI `mcp-contextforge-gateway`, in a venv of its own: it pins its own
# `mcp`). Sets $http_peers to the gateway_peers.py arguments that add
# them: `mcp-proxy-rs` and `contextforge`. ASKGATE_PEERS_HTTP=0 leaves them
# out (then $http_peers is empty).
bench_http_peers() {
    http_peers=()
    if [ "${ASKGATE_PEERS_HTTP:-1}" = 0 ]; then
        return
    fi
    local rs="$prefix/mcp-proxy-rs" cf="$prefix/contextforge"
    if [ ! -x "$rs/bin/mcp-proxy" ]; then
        echo "bench: installing the Rust mcp-proxy 0.6.0 under $rs (once)" >&2
        cargo install --quiet --locked --version 0.6.0 --root "$rs" mcp-proxy
    fi
    if [ ! -x "$cf/bin/python" ]; then
        echo "bench: installing ContextForge's mcpgateway under $cf (once)" >&2
        python3 -m venv "$cf"
        "$cf/bin/python" -m pip install --quiet "mcp-contextforge-gateway==1.0.7.post20260921"
    fi
    local dir=$1 port
    # mcp-proxy takes its port from its config, not its command line: one
    # free now (each round starts it again on the same port).
    port=$("$prefix/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat > "$dir/mcp-proxy-rs.toml" <<TOML
[proxy]
name = "bench"
separator = "__"

[proxy.listen]
host = "127.0.0.1"
port = $port

[[backends]]
name = "everything"
transport = "stdio"
command = "node"
args = ["$everything", "stdio"]
TOML
    # ContextForge refuses to start without secrets of its own; these
    # are the bench's, random each run, never used for anything.
    secret() { "$prefix/venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(48))'; }
    cat > "$dir/contextforge.sh" <<SH
#!/bin/sh
export JWT_SECRET_KEY=$(secret) AUTH_ENCRYPTION_SECRET=$(secret)
export PLATFORM_ADMIN_PASSWORD="Pw9-$(secret)" BASIC_AUTH_PASSWORD="Pw8-$(secret)"
exec "$cf/bin/python" -m mcpgateway.translate --stdio "node $everything stdio" \
    --expose-streamable-http --port "\$1" --logLevel error
SH
    chmod +x "$dir/contextforge.sh"
    http_peers=(
        --http-candidate "mcp-proxy-rs=$rs/bin/mcp-proxy --config $dir/mcp-proxy-rs.toml"
        --url "http://127.0.0.1:$port/"
        --http-candidate "contextforge=$dir/contextforge.sh {PORT}"
        --url "http://127.0.0.1:{PORT}/mcp"
    )
}
