//! Structs MCP cannot carry do not compile, and the error says why. The
//! expected messages are in `tests/ui/*.stderr` (regenerate them with
//! `TRYBUILD=overwrite cargo test -p askgate-derive --test compile_errors`,
//! then read the diff: it is what a user reads).

#[test]
fn structs_mcp_cannot_carry_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
