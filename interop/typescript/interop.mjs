// Interop: the TypeScript MCP SDK as the client of askgate's interop server
// (crates/askgate-conformance, `askgate-interop-server`).
//
// Two packages of the TypeScript SDK (github modelcontextprotocol/typescript-sdk):
// - `@modelcontextprotocol/sdk` (1.x): the package most clients use. It
//   speaks up to 2025-11-25 and has no multi round-trip (MRTR) support; the
//   script says so, naming the version it checked, instead of running MRTR.
// - `@modelcontextprotocol/client` (2.x): its successor, split out of the
//   same repository, with 2026-07-28 and MRTR.
//
// A scripted person answers the server's asks through the SDK's
// `elicitation/create` request handler. Each scenario calls the `deploy` tool
// and checks what the person was asked and what the tool returned:
// - accept:  the form arrives with its labelled choice, bounds and default;
//            the answer omits replicas, the server applies the default (2).
// - decline: the outcome is `declined`, not an error.
// - cancel:  the outcome is `cancelled`, not an error.
// - reask:   replicas 9 is refused; the second ask names the problem and
//            asks only replicas; 3 settles it, with the environment of round one.
// - mrtr-state (2026-07-28 only): the rounds driven by hand: the
//            input_required result carries the ask under its key and a sealed
//            requestState; a tampered or replayed state is refused.
// Over stdio (the SDK spawns the server) and Streamable HTTP.
//
//   node interop.mjs --server target/debug/askgate-interop-server \
//        --modules target/interop/node/node_modules --package sdk|client
//
// Exits non-zero when any scenario fails, saying which and why.

import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const CLASSIC = '2025-11-25';
const MRTR = '2026-07-28';
const SCENARIO_TIMEOUT_MS = 30_000;

const { values: args } = parseArgs({
    options: {
        server: { type: 'string' },
        modules: { type: 'string' },
        package: { type: 'string', default: 'sdk' },
        logs: { type: 'string' },
        only: { type: 'string' }
    }
});
if (!args.server || !args.modules) {
    console.error('usage: node interop.mjs --server BIN --modules NODE_MODULES [--package sdk|client] [--logs DIR] [--only SCENARIO]');
    process.exit(2);
}
const server = resolve(args.server);
const modules = resolve(args.modules);
const requireFrom = createRequire(join(modules, 'interop.cjs'));
const logs = args.logs ? resolve(args.logs) : mkdtempSync(join(tmpdir(), 'askgate-interop-'));
mkdirSync(logs, { recursive: true });

class Failed extends Error {}

function check(condition, message) {
    if (!condition) throw new Failed(message);
}

/** The SDK's classes, behind one small face for both packages. */
function loadSdk(pkg) {
    // Read from the folder: `exports` hides (sdk: maps elsewhere) package.json.
    const version = JSON.parse(readFileSync(join(modules, '@modelcontextprotocol', pkg, 'package.json'), 'utf8')).version;
    if (pkg === 'sdk') {
        const { Client } = requireFrom('@modelcontextprotocol/sdk/client/index.js');
        const { StdioClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/stdio.js');
        const { StreamableHTTPClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/streamableHttp.js');
        const types = requireFrom('@modelcontextprotocol/sdk/types.js');
        return {
            name: `@modelcontextprotocol/sdk ${version}`,
            version,
            // MRTR needs InputRequiredResult (inputRequests, requestState) and
            // the 2026-07-28 revision; 1.x has neither (checked in its types).
            mrtr: types.SUPPORTED_PROTOCOL_VERSIONS.includes(MRTR) && 'InputRequiredResultSchema' in types,
            supported: types.SUPPORTED_PROTOCOL_VERSIONS,
            StdioClientTransport,
            StreamableHTTPClientTransport,
            client() {
                // 1.x always runs the initialize handshake (at most 2025-11-25).
                return new Client({ name: 'askgate-interop', version: '0' }, { capabilities: { elicitation: { form: {} } } });
            },
            onElicit(client, handler) {
                client.setRequestHandler(types.ElicitRequestSchema, request => handler(request.params));
            }
        };
    }
    const sdk = requireFrom('@modelcontextprotocol/client');
    const { StdioClientTransport } = requireFrom('@modelcontextprotocol/client/stdio');
    return {
        name: `@modelcontextprotocol/client ${version}`,
        version,
        // 2.x lists only the handshake-era versions in
        // SUPPORTED_PROTOCOL_VERSIONS; 2026-07-28 comes by versionNegotiation,
        // and MRTR with the input_required helpers.
        mrtr: typeof sdk.isInputRequiredResult === 'function' && typeof sdk.withInputRequired === 'function',
        supported: [...sdk.SUPPORTED_PROTOCOL_VERSIONS, MRTR],
        StdioClientTransport,
        StreamableHTTPClientTransport: sdk.StreamableHTTPClientTransport,
        isInputRequiredResult: sdk.isInputRequiredResult,
        client(era) {
            return new sdk.Client(
                { name: 'askgate-interop', version: '0' },
                {
                    capabilities: { elicitation: { form: {} } },
                    versionNegotiation: { mode: era === MRTR ? 'auto' : 'legacy' }
                }
            );
        },
        onElicit(client, handler) {
            client.setRequestHandler('elicitation/create', request => handler(request.params));
        }
    };
}

const sdk = loadSdk(args.package);

/** A scripted person: gives its answers in order, records each ask. */
class Person {
    constructor(...answers) {
        this.answers = answers;
        this.asked = [];
    }
    async answer(params) {
        check(params.mode === undefined || params.mode === 'form', `the person expected a form, got ${JSON.stringify(params)}`);
        this.asked.push(params);
        const next = this.answers.shift();
        if (!next) throw new Error(`the scripted person was asked more than expected: ${JSON.stringify(params.message)}`);
        const [action, content] = next;
        return content === undefined ? { action } : { action, content };
    }
}

function outcomeOf(result) {
    check(!result.isError, `the tool call failed: ${JSON.stringify(result.content)}`);
    check(result.content?.length === 1 && result.content[0].type === 'text', `expected one text block: ${JSON.stringify(result.content)}`);
    return JSON.parse(result.content[0].text);
}

function checkPath(outcome, era) {
    const path = era === MRTR ? 'input_required' : 'elicitation/create';
    check(outcome.revision === era, `the server saw revision ${outcome.revision}, expected ${era}`);
    check(outcome.path === path, `the server asked by ${outcome.path}, expected ${path}`);
}

/** A choice property's options, value -> label (titled oneOf, or legacy enum + enumNames). */
function labels(schema) {
    if (schema.oneOf) return Object.fromEntries(schema.oneOf.map(o => [o.const, o.title ?? o.const]));
    const names = schema.enumNames ?? schema.enum ?? [];
    return Object.fromEntries((schema.enum ?? []).map((v, i) => [v, names[i]]));
}

function same(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
}

function checkFirstAsk(person) {
    check(person.asked.length >= 1, 'the person was never asked');
    const ask = person.asked[0];
    check(ask.message.includes('billing'), `the message does not name the service: ${JSON.stringify(ask.message)}`);
    const props = ask.requestedSchema?.properties ?? {};
    check(same(Object.keys(props), ['environment', 'replicas', 'confirm']), `asked ${Object.keys(props)}, expected environment, replicas, confirm`);
    const env = labels(props.environment);
    check(same(env, { staging: 'Staging', production: 'Production' }), `environment options: ${JSON.stringify(env)}`);
    const replicas = props.replicas;
    check(replicas.type === 'integer', `replicas type: ${JSON.stringify(replicas)}`);
    check(replicas.minimum === 1 && replicas.maximum === 5, `replicas bounds: ${JSON.stringify(replicas)}`);
    check(replicas.default === 2, `replicas default: ${JSON.stringify(replicas)}`);
    check(props.confirm.type === 'boolean', `confirm type: ${JSON.stringify(props.confirm)}`);
}

function valuesOf(outcome) {
    return Object.fromEntries(Object.entries(outcome.values ?? {}).map(([k, v]) => [k, [v.value, v.source]]));
}

/** Connect a client for `era` with `person` answering; the caller closes it. */
async function connected(connect, person, era) {
    const client = sdk.client(era);
    sdk.onElicit(client, params => person.answer(params));
    await client.connect(connect());
    // 1.x has no getter for the negotiated version; the server's outcome
    // names the revision it saw, which every scenario checks.
    if (typeof client.getNegotiatedProtocolVersion === 'function') {
        const negotiated = client.getNegotiatedProtocolVersion();
        check(negotiated === era, `negotiated ${negotiated}, expected ${era}`);
    }
    return client;
}

async function deploy(connect, person, era) {
    const client = await connected(connect, person, era);
    try {
        return outcomeOf(await client.callTool({ name: 'deploy', arguments: { service: 'billing' } }));
    } finally {
        await client.close();
    }
}

const scenarios = {
    async accept(connect, era) {
        const person = new Person(['accept', { environment: 'staging', confirm: true }]);
        const outcome = await deploy(connect, person, era);
        check(person.asked.length === 1, `asked ${person.asked.length} times, expected once`);
        checkFirstAsk(person);
        check(outcome.outcome === 'accepted', `outcome: ${JSON.stringify(outcome)}`);
        const expected = { environment: ['staging', 'answered'], replicas: [2, 'defaulted'], confirm: [true, 'answered'] };
        check(same(valuesOf(outcome), expected), `values ${JSON.stringify(valuesOf(outcome))}, expected ${JSON.stringify(expected)}`);
        checkPath(outcome, era);
    },
    async decline(connect, era) {
        const person = new Person(['decline']);
        const outcome = await deploy(connect, person, era);
        check(person.asked.length === 1, `asked ${person.asked.length} times, expected once`);
        check(outcome.outcome === 'declined', `outcome: ${JSON.stringify(outcome)}`);
        checkPath(outcome, era);
    },
    async cancel(connect, era) {
        const person = new Person(['cancel']);
        const outcome = await deploy(connect, person, era);
        check(person.asked.length === 1, `asked ${person.asked.length} times, expected once`);
        check(outcome.outcome === 'cancelled', `outcome: ${JSON.stringify(outcome)}`);
        checkPath(outcome, era);
    },
    async reask(connect, era) {
        const person = new Person(['accept', { environment: 'production', replicas: 9, confirm: true }], ['accept', { replicas: 3 }]);
        const outcome = await deploy(connect, person, era);
        check(person.asked.length === 2, `asked ${person.asked.length} times, expected twice`);
        checkFirstAsk(person);
        const again = person.asked[1];
        check(again.message.includes('Replicas: 9 is too large'), `the re-ask does not name the problem: ${JSON.stringify(again.message)}`);
        const props = Object.keys(again.requestedSchema?.properties ?? {});
        check(same(props, ['replicas']), `the re-ask asks ${props}, expected only replicas`);
        check(outcome.outcome === 'accepted', `outcome: ${JSON.stringify(outcome)}`);
        const expected = { environment: ['production', 'answered'], replicas: [3, 'answered'], confirm: [true, 'answered'] };
        check(same(valuesOf(outcome), expected), `values ${JSON.stringify(valuesOf(outcome))}, expected ${JSON.stringify(expected)}`);
        checkPath(outcome, era);
    },
    async 'mrtr-state'(connect, era) {
        const client = await connected(connect, new Person(), era);
        const manual = { allowInputRequired: true };
        const call = extra => client.callTool({ name: 'deploy', arguments: { service: 'billing' }, ...extra }, manual);
        const answer = { deploy: { action: 'accept', content: { environment: 'staging', confirm: true } } };
        try {
            const first = await call({});
            check(sdk.isInputRequiredResult(first), `expected an input_required result, got ${JSON.stringify(first)}`);
            const keys = Object.keys(first.inputRequests ?? {});
            check(same(keys, ['deploy']), `input requests ${keys}, expected the key 'deploy'`);
            check(first.inputRequests.deploy.method === 'elicitation/create', `input request: ${JSON.stringify(first.inputRequests.deploy)}`);
            const state = first.requestState;
            check(typeof state === 'string' && state.length > 16, `expected a sealed requestState, got ${state}`);

            const tampered = state.slice(0, -2) + (state.endsWith('AA') ? 'BB' : 'AA');
            await refused(() => call({ inputResponses: answer, requestState: tampered }), 'a tampered requestState');

            const done = await call({ inputResponses: answer, requestState: state });
            check(!sdk.isInputRequiredResult(done), `the answered retry did not complete: ${JSON.stringify(done)}`);
            const outcome = outcomeOf(done);
            check(outcome.outcome === 'accepted', `outcome: ${JSON.stringify(outcome)}`);
            checkPath(outcome, era);

            const error = await refused(() => call({ inputResponses: answer, requestState: state }), 'a used requestState');
            check(error.message.includes('already used'), `replayed state: ${error.message}`);
        } finally {
            await client.close();
        }
    }
};

/** `f` must fail with -32602; the error. */
async function refused(f, what) {
    let result;
    try {
        result = await f();
    } catch (error) {
        check(error.code === -32602, `${what}: ${error}, expected -32602`);
        return error;
    }
    throw new Failed(`${what} was accepted: ${JSON.stringify(result)}`);
}

const eras = { accept: [CLASSIC, MRTR], decline: [CLASSIC, MRTR], cancel: [CLASSIC, MRTR], reask: [CLASSIC, MRTR], 'mrtr-state': [MRTR] };

/** Start the HTTP server on a free port; its URL once it listens. */
async function startHttp(log) {
    writeFileSync(log, '');
    const child = spawn(server, ['--port', '0'], { stdio: ['ignore', 'ignore', openSync(log, 'a')] });
    for (let i = 0; i < 400; i++) {
        const found = /listening on (\S+)/.exec(readFileSync(log, 'utf8'));
        if (found) return { child, url: found[1] };
        if (child.exitCode !== null) break;
        await new Promise(r => setTimeout(r, 50));
    }
    child.kill();
    console.error(`interop typescript: the HTTP server did not start; its log:\n${readFileSync(log, 'utf8')}`);
    process.exit(1);
}

function withTimeout(promise, label) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Failed(`no result within ${SCENARIO_TIMEOUT_MS / 1000}s`)), SCENARIO_TIMEOUT_MS);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
    const tag = args.package === 'sdk' ? 'typescript-sdk' : 'typescript-client';
    console.log(`interop ${tag}: ${sdk.name}`);
    if (!sdk.mrtr) {
        console.log(
            `interop ${tag}: NOTICE — MRTR (${MRTR}, InputRequiredResult with inputRequests/requestState) is not in ${sdk.name} ` +
                `(its protocol versions: ${sdk.supported.join(', ')}); only the ${CLASSIC} scenarios run with it.`
        );
    }
    const stderrLog = join(logs, `${tag}-stdio-server.log`);
    writeFileSync(stderrLog, '');
    const { child, url } = await startHttp(join(logs, `${tag}-http-server.log`));
    const transports = {
        stdio: () => new sdk.StdioClientTransport({ command: server, args: ['--stdio'], stderr: openSync(stderrLog, 'a') }),
        http: () => new sdk.StreamableHTTPClientTransport(new URL(url))
    };
    let passed = 0;
    const failures = [];
    try {
        for (const [transport, connect] of Object.entries(transports)) {
            for (const [name, scenario] of Object.entries(scenarios)) {
                if (args.only && args.only !== name) continue;
                for (const era of eras[name]) {
                    if (era === MRTR && !sdk.mrtr) continue;
                    const label = `${sdk.name} ${transport} ${era} ${name}`;
                    try {
                        await withTimeout(scenario(connect, era), label);
                        passed++;
                        console.log(`ok     ${label}`);
                    } catch (error) {
                        const why = error instanceof Failed ? error.message : `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
                        failures.push(`${label}: ${why}`);
                        console.log(`FAILED ${label}: ${why}`);
                    }
                }
            }
        }
    } finally {
        child.kill('SIGTERM');
    }
    if (failures.length) {
        console.error(`\ninterop ${tag}: ${failures.length} scenario(s) failed (server logs in ${logs}):`);
        for (const failure of failures) console.error(`  - ${failure}`);
    }
    console.log(`${tag}: ${passed} passed, ${failures.length} failed`);
    process.exit(failures.length ? 1 : 0);
}

await main();
