// The differential battery, TypeScript side (issue 16): the npm
// `@modelcontextprotocol/sdk` Client on stdio runs every operation of
// differential_battery.json against the server the command after `--`
// starts — server-everything directly, or `askgate gateway -- ...` in front
// of it — and writes what came back as a JSON transcript, for
// differential_compare.py to hold against the other run.
//
// The client declares elicitation (form and url), sampling and roots, and
// answers the server's requests with the battery's fixed answers. Per
// operation the transcript holds the result or the error (code, message,
// data), the server's requests the client answered during it, the progress
// notifications of its call (with `progress`) and the notifications it
// awaits (with `await`). Besides the battery: `initialize` (the handshake's
// result), `coverage` (listed tools no operation calls) and
// `notifications-elsewhere` (the methods of the notifications no operation
// claimed). The same transcript shape as differential_python.py.
//
//   node differential_typescript.mjs --modules NODE_MODULES --out FILE [--log FILE] -- COMMAND [ARGS...]

import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const BATTERY = fileURLToPath(new URL('differential_battery.json', import.meta.url));
const OPERATION_TIMEOUT_MS = 30_000;

const { values: args, positionals: command } = parseArgs({
    allowPositionals: true,
    options: {
        modules: { type: 'string' },
        out: { type: 'string' },
        log: { type: 'string' }
    }
});
if (!args.modules || !args.out || command.length === 0) {
    console.error(
        'usage: node differential_typescript.mjs --modules NODE_MODULES --out FILE [--log FILE] -- COMMAND [ARGS...]'
    );
    process.exit(2);
}
const requireFrom = createRequire(join(resolve(args.modules), 'gateway-e2e.cjs'));
const { Client } = requireFrom('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/stdio.js');
const { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, McpError } = requireFrom(
    '@modelcontextprotocol/sdk/types.js'
);
// Read from the folder: the package's `exports` hide its package.json.
const sdkPackage = join(resolve(args.modules), '@modelcontextprotocol', 'sdk', 'package.json');
const version = JSON.parse(readFileSync(sdkPackage, 'utf8')).version;
const SDK = `@modelcontextprotocol/sdk ${version}`;

/** An error as the transcript records it: a JSON-RPC error's code, message
 * and data, else what the SDK threw. */
function failure(error) {
    if (error instanceof McpError) {
        const said = { code: error.code, message: error.message };
        if (error.data !== undefined) said.data = error.data;
        return said;
    }
    return { exception: error?.name ?? typeof error, message: String(error?.message ?? error).split(/\s+/).join(' ') };
}

/** The value as JSON says it (no undefined fields). */
function plain(value) {
    return value === undefined ? {} : JSON.parse(JSON.stringify(value));
}

function withTimeout(promise) {
    let timer;
    const timeout = new Promise((_, reject) => {
        const late = Object.assign(new Error(`no answer within ${OPERATION_TIMEOUT_MS / 1000}s`), { name: 'TimeoutError' });
        timer = setTimeout(() => reject(late), OPERATION_TIMEOUT_MS);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function matches(notification, wanted) {
    if (notification.method !== wanted.method) return false;
    return wanted.match === undefined || new RegExp(wanted.match).test(JSON.stringify(notification.params ?? {}));
}

/** Every page of a list, as one result. */
async function allPages(listPage, key) {
    const items = [];
    let cursor;
    for (;;) {
        const page = plain(await listPage(cursor ? { cursor } : undefined));
        items.push(...(page[key] ?? []));
        cursor = page.nextCursor;
        if (!cursor) {
            delete page.nextCursor;
            page[key] = items;
            return page;
        }
    }
}

/** Send one operation of the battery the SDK's way; its result. */
async function request(client, step) {
    const params = step.params ?? {};
    switch (step.method) {
        case 'ping':
            return plain(await client.ping());
        case 'logging/setLevel':
            return plain(await client.setLoggingLevel(params.level));
        case 'tools/list':
            return allPages(p => client.listTools(p), 'tools');
        case 'prompts/list':
            return allPages(p => client.listPrompts(p), 'prompts');
        case 'resources/list':
            return allPages(p => client.listResources(p), 'resources');
        case 'resources/templates/list':
            return allPages(p => client.listResourceTemplates(p), 'resourceTemplates');
        case 'resources/read':
            return plain(await client.readResource(params));
        case 'resources/subscribe':
            return plain(await client.subscribeResource(params));
        case 'resources/unsubscribe':
            return plain(await client.unsubscribeResource(params));
        case 'prompts/get':
            return plain(await client.getPrompt(params));
        case 'completion/complete':
            return plain(await client.complete(params));
        case 'tools/call': {
            // The SDK's onprogress runs a tick late, after a response that
            // follows at once has dropped it; the transcript takes progress
            // off the wire instead (makeClient), all of it.
            const options = step.progress ? { onprogress: () => {} } : undefined;
            return plain(await client.callTool(params, undefined, options));
        }
        default:
            throw new Error(`the battery names a method this client does not send: ${step.method}`);
    }
}

const sleep = ms => new Promise(done => setTimeout(done, ms));

/** Run one operation; what the transcript says of it. */
async function operation(client, seen, step, awaitSeconds, claimed) {
    const firstNotification = seen.notifications.length;
    const firstRequest = seen.requests.length;
    const firstProgress = seen.progress.length;
    const said = { op: step.op };
    try {
        said.result = await withTimeout(request(client, step));
    } catch (error) {
        said.error = failure(error);
    }
    const awaited = step.await ?? [];
    const deadline = Date.now() + awaitSeconds * 1000;
    while (awaited.length > 0 && Date.now() < deadline) {
        const recent = seen.notifications.slice(firstNotification);
        if (awaited.every(wanted => recent.some(n => matches(n, wanted)))) break;
        await sleep(50);
    }
    if (awaited.length > 0) {
        said.notifications = [];
        for (let index = firstNotification; index < seen.notifications.length; index++) {
            if (awaited.some(wanted => matches(seen.notifications[index], wanted))) {
                said.notifications.push(seen.notifications[index]);
                claimed.add(index);
            }
        }
    }
    if (step.progress) said.progress = seen.progress.slice(firstProgress);
    said.requests = seen.requests.slice(firstRequest);
    return said;
}

/** The listed tools no operation of the battery calls. */
function coverage(operations, steps) {
    const listed = operations.find(o => o.op === 'tools-list')?.result?.tools ?? [];
    const called = new Set(steps.filter(s => s.method === 'tools/call').map(s => s.params.name));
    return { op: 'coverage', result: { uncalled: listed.map(t => t.name).filter(n => !called.has(n)).sort() } };
}

/** A client declaring elicitation, sampling and roots, answering with the
 * battery's answers; `seen` collects what the server sent it. */
function makeClient(answers, seen) {
    const client = new Client(
        { name: 'askgate-differential', version: '1.0.0' },
        { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } } }
    );
    client.setRequestHandler(ElicitRequestSchema, async request => {
        seen.requests.push({ method: 'elicitation/create', params: plain(request.params) });
        return request.params.mode === 'url' ? answers.elicitation_url : answers.elicitation_form;
    });
    client.setRequestHandler(CreateMessageRequestSchema, async request => {
        seen.requests.push({ method: 'sampling/createMessage', params: plain(request.params) });
        return answers.sampling;
    });
    // Not recorded: the server asks at a moment of its own (after the
    // handshake), not during one operation.
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: answers.roots }));
    // The handshake's result, as the SDK parsed it (the Client keeps only parts).
    const send = client.request.bind(client);
    client.request = async (request, schema, options) => {
        const result = await send(request, schema, options);
        if (request.method === 'initialize') seen.initialize = result;
        return result;
    };
    client.fallbackNotificationHandler = async notification => {
        seen.notifications.push(plain(notification));
    };
    return client;
}

/** The stdio transport to the server under test. */
function makeTransport() {
    return new StdioClientTransport({
        command: command[0],
        args: command.slice(1),
        env: { ...process.env },
        stderr: args.log ? openSync(args.log, 'w') : 'ignore'
    });
}

async function run() {
    const battery = JSON.parse(readFileSync(BATTERY, 'utf8'));
    const seen = { notifications: [], requests: [], progress: [], initialize: undefined };
    const client = makeClient(battery.answers, seen);
    const operations = [];
    const claimed = new Set();
    try {
        const transport = makeTransport();
        await withTimeout(client.connect(transport));
        // Progress as it comes off the wire, in order (without the token, the client's own).
        const receive = transport.onmessage;
        transport.onmessage = (message, extra) => {
            if (message?.method === 'notifications/progress') {
                const { progressToken, ...said } = message.params ?? {};
                seen.progress.push(said);
            }
            receive(message, extra);
        };
        operations.push({ op: 'initialize', result: plain(seen.initialize) });
    } catch (error) {
        operations.push({ op: 'initialize', error: failure(error) });
        return { client: SDK, server: command, operations };
    }
    for (const step of battery.operations) {
        operations.push(await operation(client, seen, step, battery.await_seconds, claimed));
    }
    await client.close();
    operations.push(coverage(operations, battery.operations));
    // By method (a set, as a map: a missing one shows as itself).
    const methods = [...new Set(seen.notifications.filter((_, i) => !claimed.has(i)).map(n => n.method))].sort();
    const elsewhere = Object.fromEntries(methods.map(m => [m, true]));
    operations.push({ op: 'notifications-elsewhere', result: { methods: elsewhere } });
    return { client: SDK, server: command, operations };
}

const transcript = await run();
writeFileSync(args.out, JSON.stringify(transcript, null, 2) + '\n');
const failed = transcript.operations.filter(o => 'error' in o).length;
console.error(`differential_typescript: ${transcript.operations.length} operations, ${failed} answered with an error`);
process.exit(0);
