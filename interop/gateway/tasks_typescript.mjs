// Tasks through the gateway (issue 16): a 2025-11-25 task-augmented tool call
// (SEP-1686) by the npm `@modelcontextprotocol/sdk` Client on stdio, through
// the SDK's experimental tasks API (`client.experimental.tasks.callToolStream`,
// `getTask`, `listTasks`, `cancelTask`), against the server the command after
// `--` starts: npm @modelcontextprotocol/server-everything directly, or a
// zero-config `askgate gateway -- node .../index.js stdio` in front of it.
// The tool is server-everything's `simulate-research-query`
// (`execution.taskSupport: "required"`; four one-second stages; with
// `ambiguous: true` it asks a clarification inside the task, an
// `elicitation/create` carrying `_meta["io.modelcontextprotocol/related-task"]`,
// queued by the server until the client calls `tasks/result`).
//
// The client declares `elicitation: {form: {}}` and
// `tasks: {requests: {elicitation: {create: {}}}}`. A scripted person reads
// each ask for PERSON_READS_MS (over the gateway's min_answer_ms), accepts
// askgate's confirmation (a form of one boolean `confirm`) with
// `{confirm: true}` and answers the server's clarification with the first
// value its schema allows. Scenarios:
// - tools-list-task-support:     the tool is listed with execution.taskSupport "required"
// - initialize-tasks-capability: the server's capabilities have tasks.requests.tools.call
// - task-call-streams-to-result: callToolStream (the task asked for explicitly)
//                                yields taskCreated, taskStatus messages, then a
//                                result with content; the clarification is asked
//                                once, related to the task, and its answer reaches
//                                the report; through the gateway the confirmation
//                                is asked before the task exists (before taskCreated)
// - task-get-and-list:           tasks/get of a running task says its status and the
//                                ttl and pollInterval it was created with; tasks/list has it
// - task-cancel:                 a running task cancelled with tasks/cancel is
//                                `cancelled`, and still is after a stage has passed
//
// The first run (without --direct) is against the server itself: every scenario
// must pass, and what it saw is written to --out. The second (--direct FILE,
// the first run's transcript) is through the gateway: each scenario also holds
// its values against the direct run's, where the server decides them (ttl,
// pollInterval, statuses, schemas, the report) and ids and timestamps are not
// compared; a failure listed in expected-failures.txt (`tasks-typescript
// SCENARIO`) is known. The second run's closing line counts both runs.
//
//   node tasks_typescript.mjs --modules NODE_MODULES --out FILE [--log FILE] [--direct FILE] -- COMMAND [ARGS...]

import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const SUITE = 'tasks-typescript';
const TOOL = 'simulate-research-query';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const SCENARIO_TIMEOUT_MS = 30_000;
// Longer than the gateway's min_answer_ms (250 ms by default), under which an
// answer counts as shown to nobody.
const PERSON_READS_MS = 300;
// What the client asks for; server-everything gives its tasks a ttl of its own.
const ASKED_TTL_MS = 60_000;
const EXPECTED_FAILURES = fileURLToPath(new URL('expected-failures.txt', import.meta.url));

const { values: args, positionals: command } = parseArgs({
    allowPositionals: true,
    options: {
        modules: { type: 'string' },
        out: { type: 'string' },
        log: { type: 'string' },
        direct: { type: 'string' },
        only: { type: 'string' }
    }
});
if (!args.modules || !args.out || command.length === 0) {
    console.error(
        'usage: node tasks_typescript.mjs --modules NODE_MODULES --out FILE [--log FILE] [--direct FILE] [--only SCENARIO] -- COMMAND [ARGS...]'
    );
    process.exit(2);
}
const requireFrom = createRequire(join(resolve(args.modules), 'gateway-e2e.cjs'));
const { Client } = requireFrom('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/stdio.js');
const { ElicitRequestSchema, McpError } = requireFrom('@modelcontextprotocol/sdk/types.js');
// Read from the folder: the package's `exports` hide its package.json.
const version = JSON.parse(readFileSync(join(resolve(args.modules), '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8')).version;
const SDK = `@modelcontextprotocol/sdk ${version}`;
const through = args.direct ? 'gateway' : 'direct';
const direct = args.direct ? JSON.parse(readFileSync(args.direct, 'utf8')) : null;

class Failed extends Error {}

function check(condition, message) {
    if (!condition) throw new Failed(message);
}

function same(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
}

function shown(value) {
    return value === undefined ? 'nothing' : JSON.stringify(value);
}

/** The value as JSON says it (no undefined fields). */
function plain(value) {
    return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** An error, said in one line: a JSON-RPC error's code and message. */
function said(error) {
    if (error instanceof McpError) return `error ${error.code}: ${error.message.split(/\s+/).join(' ')}`;
    return `${error?.name ?? 'Error'}: ${String(error?.message ?? error).split(/\s+/).join(' ')}`;
}

const sleep = ms => new Promise(done => setTimeout(done, ms));

/** What the client saw, in order: stream messages, asks, wire traffic. */
const seen = { events: [], wire: [], scenario: null };
function event(kind, fields) {
    const at = seen.events.length;
    seen.events.push({ at, kind, scenario: seen.scenario, ...fields });
    return at;
}

/** askgate's confirmation: a form of one boolean field, `confirm`. */
function isConfirmation(params) {
    const props = params.requestedSchema?.properties ?? {};
    return same(Object.keys(props), ['confirm']) && props.confirm?.type === 'boolean';
}

/** A value the schema of one field accepts: its default, else the first it allows. */
function valueFor(field) {
    if (field.default !== undefined) return field.default;
    if (Array.isArray(field.oneOf) && field.oneOf.length) return field.oneOf[0].const;
    if (Array.isArray(field.enum) && field.enum.length) return field.enum[0];
    if (field.type === 'boolean') return true;
    if (field.type === 'number' || field.type === 'integer') return field.minimum ?? 0;
    if (field.type === 'array') {
        const first = field.items?.anyOf?.[0]?.const ?? field.items?.enum?.[0];
        return first === undefined ? [] : [first];
    }
    return 'askgate';
}

/** The person: reads, then accepts the confirmation, or answers every field
 * of any other form with a value its schema allows. */
async function answer(request) {
    const params = plain(request.params);
    const confirmation = isConfirmation(params);
    const index = event('elicitation', { confirmation, params });
    await sleep(PERSON_READS_MS);
    if (confirmation) return { action: 'accept', content: { confirm: true } };
    const content = {};
    for (const [name, field] of Object.entries(params.requestedSchema?.properties ?? {})) content[name] = valueFor(field);
    seen.events[index].answered = content;
    return { action: 'accept', content };
}

function makeClient() {
    const client = new Client(
        { name: 'askgate-tasks-e2e', version: '1.0.0' },
        { capabilities: { elicitation: { form: {} }, tasks: { requests: { elicitation: { create: {} } } } } }
    );
    client.setRequestHandler(ElicitRequestSchema, answer);
    client.fallbackNotificationHandler = async notification => {
        event('notification', { method: notification.method, params: plain(notification.params) });
    };
    return client;
}

/** The stdio transport to the server under test, its traffic kept in `seen.wire`. */
function makeTransport() {
    const transport = new StdioClientTransport({
        command: command[0],
        args: command.slice(1),
        env: { ...process.env },
        stderr: args.log ? openSync(args.log, 'w') : 'ignore'
    });
    const started = Date.now();
    const note = (direction, message) => {
        const entry = { ms: Date.now() - started, direction, scenario: seen.scenario };
        if (message.method) entry.method = message.method;
        if (message.id !== undefined) entry.id = message.id;
        if (message.params?.task) entry.task = message.params.task;
        if (message.params?._meta?.[RELATED_TASK]) entry.relatedTask = message.params._meta[RELATED_TASK];
        if (message.result?._meta?.[RELATED_TASK]) entry.relatedTask = message.result._meta[RELATED_TASK];
        if (message.result?.task) entry.createdTask = message.result.task;
        if (message.result?.status) entry.status = message.result.status;
        if (message.params?.status) entry.status = message.params.status;
        if (message.error) entry.error = message.error;
        if (message.result && !message.result.task) entry.resultKeys = Object.keys(message.result).sort();
        if (Array.isArray(message.result?.content)) entry.text = text(message.result).slice(0, 300);
        if (message.result?.isError !== undefined) entry.isError = message.result.isError;
        seen.wire.push(entry);
    };
    const send = transport.send.bind(transport);
    transport.send = async (message, options) => {
        note('out', message);
        return send(message, options);
    };
    return { transport, note };
}

/** What the server answered to this scenario's last tools/call, as the wire
 * carried it (for a failure's message: the SDK only says it could not parse it). */
function callAnswer() {
    const call = seen.wire.findLast(w => w.direction === 'out' && w.method === 'tools/call' && w.scenario === seen.scenario);
    const answer = call && seen.wire.find(w => w.direction === 'in' && !w.method && w.id === call.id);
    if (!answer) return 'no answer to tools/call';
    if (answer.createdTask) return `tools/call answered with task ${answer.createdTask.taskId}`;
    if (answer.error) return `tools/call answered with error ${answer.error.code}: ${answer.error.message}`;
    const flag = answer.isError ? ' with isError: true' : '';
    return `tools/call answered without a task: a result {${answer.resultKeys.join(', ')}}${flag}, ${JSON.stringify(answer.text ?? '')}`;
}

/** The first message of a task-augmented call's stream is taskCreated. */
function checkCreated(message) {
    if (message?.type === 'taskCreated') return;
    // The SDK parses the answer as a CreateTaskResult: an answer without `task` fails that parse.
    const parse = /"path":\s*\[\s*"task"\s*\]/.test(message?.error?.message ?? '');
    const error = message?.error ? ` (${parse ? 'the SDK found no `task` in the answer' : said(message.error)})` : '';
    throw new Failed(`the stream began with ${message?.type ?? 'nothing'}${error}; ${callAnswer()}`);
}

/** Every page of tasks/list. */
async function allTasks(client) {
    const tasks = [];
    let cursor;
    do {
        const page = await client.experimental.tasks.listTasks(cursor);
        tasks.push(...(page.tasks ?? []));
        cursor = page.nextCursor;
    } while (cursor);
    return tasks;
}

/** A task-augmented call of the tool, up to its taskCreated message (the
 * stream is then closed: the client stops polling, the task runs on). */
async function startTask(client, topic) {
    const stream = client.experimental.tasks.callToolStream(
        { name: TOOL, arguments: { topic, ambiguous: false } },
        undefined,
        { task: { ttl: ASKED_TTL_MS } }
    );
    const first = await stream.next();
    await stream.return();
    checkCreated(first.value);
    return plain(first.value.task);
}

/** The values the server decides (not ids, not timestamps), kept in the
 * transcript under `compared`; through the gateway, each must be the direct run's. */
function checkLikeDirect(name, compared) {
    observed[name] = { ...observed[name], compared: plain(compared) };
    if (!direct) return;
    const theirs = direct.observed?.[name]?.compared;
    check(theirs !== undefined, `the direct run observed nothing for ${name}`);
    for (const [key, value] of Object.entries(observed[name].compared)) {
        check(same(value, theirs[key]), `${key}: ${shown(value)} through the gateway, ${shown(theirs[key])} directly`);
    }
}

function text(result) {
    return (result?.content ?? [])
        .filter(block => block.type === 'text')
        .map(block => block.text)
        .join('\n');
}

const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** What each scenario observed, for the transcript (and the gateway run's comparison). */
const observed = {};

const scenarios = {
    async 'tools-list-task-support'(client) {
        const tools = [];
        let cursor;
        do {
            const page = await client.listTools(cursor ? { cursor } : undefined);
            tools.push(...page.tools);
            cursor = page.nextCursor;
        } while (cursor);
        const tool = tools.find(t => t.name === TOOL);
        check(tool, `${TOOL} is not listed (listed: ${tools.map(t => t.name).join(', ')})`);
        observed['tools-list-task-support'] = { execution: plain(tool.execution) };
        check(tool.execution?.taskSupport === 'required', `${TOOL} is listed with execution ${shown(tool.execution)}, expected taskSupport "required"`);
        checkLikeDirect('tools-list-task-support', { execution: tool.execution });
    },

    async 'initialize-tasks-capability'(client) {
        const capabilities = plain(client.getServerCapabilities()) ?? {};
        observed['initialize-tasks-capability'] = { tasks: capabilities.tasks };
        check(
            capabilities.tasks?.requests?.tools?.call !== undefined,
            `capabilities.tasks is ${shown(capabilities.tasks)} (capabilities: ${Object.keys(capabilities).sort().join(', ')}), expected tasks.requests.tools.call`
        );
        checkLikeDirect('initialize-tasks-capability', { tasks: capabilities.tasks });
    },

    async 'task-call-streams-to-result'(client) {
        const stream = client.experimental.tasks.callToolStream(
            { name: TOOL, arguments: { topic: 'python', ambiguous: true } },
            undefined,
            { task: { ttl: ASKED_TTL_MS } }
        );
        const messages = [];
        for await (const message of stream) {
            const entry = { type: message.type };
            if (message.task) entry.task = plain(message.task);
            if (message.result) entry.result = plain(message.result);
            if (message.error) entry.error = message.error;
            entry.event = event('stream', { type: message.type, status: message.task?.status });
            messages.push(entry);
        }
        const mine = seen.events.filter(e => e.scenario === 'task-call-streams-to-result');
        const confirmations = mine.filter(e => e.kind === 'elicitation' && e.confirmation);
        const clarifications = mine.filter(e => e.kind === 'elicitation' && !e.confirmation);
        const created = messages[0]?.task;
        const last = messages[messages.length - 1];
        const result = last?.result;
        const statuses = messages.filter(m => m.type === 'taskStatus').map(m => m.task.status);
        observed['task-call-streams-to-result'] = {
            types: messages.map(m => m.type),
            errors: messages.filter(m => m.error).map(m => said(m.error)),
            created,
            statuses,
            // The statuses in order, each once (how many polls saw each is timing).
            statusOrder: statuses.filter((s, i) => s !== statuses[i - 1]),
            clarifications: clarifications.map(e => ({ params: e.params, answered: e.answered })),
            content: result?.content,
            resultMeta: result?._meta,
            confirmations: confirmations.length
        };
        const errors = messages.filter(m => m.type === 'error').map(m => said(m.error));
        checkCreated(messages[0]);
        check(!errors.length, `the stream yielded an error: ${errors.join('; ')}`);
        check(
            messages.slice(1, -1).every(m => m.type === 'taskStatus'),
            `expected taskCreated, taskStatus..., result; the stream yielded ${messages.map(m => m.type).join(', ')}`
        );
        check(last.type === 'result', `the stream ended with ${last.type}, not a result`);
        check(Array.isArray(result.content) && result.content.length > 0, `the result has no content: ${shown(result)}`);
        check(!result.isError, `the result is an error: ${JSON.stringify(text(result))}`);
        for (const m of messages.filter(m => m.task)) {
            check(m.task.taskId === created.taskId, `a ${m.type} message names task ${m.task.taskId}, not ${created.taskId}`);
        }
        // The server's clarification, asked inside the task, its answer in the report.
        check(clarifications.length === 1, `the clarification was asked ${clarifications.length} times, expected once`);
        const [clarification] = clarifications;
        const related = clarification.params._meta?.[RELATED_TASK];
        check(
            related?.taskId === created.taskId,
            `the clarification's _meta is ${shown(clarification.params._meta)}, expected "${RELATED_TASK}": {"taskId": "${created.taskId}"}`
        );
        const chosen = Object.values(clarification.answered ?? {})[0];
        check(text(result).includes(String(chosen)), `the report does not carry the clarification ${shown(chosen)}: ${JSON.stringify(text(result).slice(0, 200))}`);
        if (direct) {
            // askgate's confirmation, asked before the task exists.
            check(confirmations.length === 1, `the confirmation was asked ${confirmations.length} times, expected once`);
            check(
                confirmations[0].at < messages[0].event,
                'the confirmation was asked after taskCreated: the task existed before the person confirmed it'
            );
        } else {
            check(confirmations.length === 0, `server-everything asked a confirmation ${confirmations.length} times`);
        }
        const { taskId, createdAt, lastUpdatedAt, statusMessage, ...decided } = created;
        const { _meta, ...asked } = clarification.params;
        checkLikeDirect('task-call-streams-to-result', {
            created: decided,
            statusOrder: observed['task-call-streams-to-result'].statusOrder,
            clarification: asked,
            answered: clarification.answered,
            content: result.content
        });
    },

    async 'task-get-and-list'(client) {
        const created = await startTask(client, 'askgate');
        const got = plain(await client.experimental.tasks.getTask(created.taskId));
        const listed = (await allTasks(client)).map(plain);
        const entry = listed.find(t => t.taskId === created.taskId);
        observed['task-get-and-list'] = { created, got, listed: entry };
        check(got.taskId === created.taskId, `tasks/get answered task ${got.taskId} for ${created.taskId}`);
        check(TASK_STATUSES.includes(got.status), `tasks/get says status ${shown(got.status)}`);
        check(got.ttl === created.ttl, `tasks/get says ttl ${shown(got.ttl)}, the task was created with ${shown(created.ttl)}`);
        check(got.pollInterval === created.pollInterval, `tasks/get says pollInterval ${shown(got.pollInterval)}, created with ${shown(created.pollInterval)}`);
        check(got.createdAt === created.createdAt, `tasks/get says createdAt ${shown(got.createdAt)}, created ${shown(created.createdAt)}`);
        check(entry, `tasks/list does not list ${created.taskId} (it lists ${listed.map(t => t.taskId).join(', ') || 'nothing'})`);
        check(entry.ttl === created.ttl, `tasks/list says ttl ${shown(entry.ttl)}, created with ${shown(created.ttl)}`);
        checkLikeDirect('task-get-and-list', {
            created: { status: created.status, ttl: created.ttl, pollInterval: created.pollInterval },
            got: { status: got.status, ttl: got.ttl, pollInterval: got.pollInterval },
            listed: { ttl: entry.ttl, pollInterval: entry.pollInterval }
        });
    },

    async 'task-cancel'(client) {
        const created = await startTask(client, 'cancelled research');
        let cancelled;
        try {
            cancelled = plain(await client.experimental.tasks.cancelTask(created.taskId));
        } catch (error) {
            observed['task-cancel'] = { created, cancelError: said(error) };
            throw new Failed(`tasks/cancel: ${said(error)}`);
        }
        // A stage later: the server's work noticed it (server-everything's own
        // status updates must not bring it back).
        await sleep(1_500);
        const later = plain(await client.experimental.tasks.getTask(created.taskId));
        observed['task-cancel'] = { created, cancelled, later };
        check(cancelled.taskId === created.taskId, `tasks/cancel answered task ${cancelled.taskId} for ${created.taskId}`);
        check(cancelled.status === 'cancelled', `tasks/cancel answered status ${shown(cancelled.status)}, expected cancelled`);
        check(later.status === 'cancelled', `the task is ${shown(later.status)} ${1.5} s after it was cancelled`);
        checkLikeDirect('task-cancel', {
            cancelled: { status: cancelled.status, statusMessage: cancelled.statusMessage },
            later: { status: later.status, statusMessage: later.statusMessage }
        });
    }
};

/** The scenarios of this suite known to fail through the gateway, each with why. */
function expectedFailures() {
    const known = new Map();
    if (!direct) return known;
    for (const line of readFileSync(EXPECTED_FAILURES, 'utf8').split('\n')) {
        const [entry, ...why] = line.split('#');
        const words = entry.trim().split(/\s+/);
        if (words.length === 2 && words[0] === SUITE) known.set(words[1], why.join('#').trim());
    }
    return known;
}

function withTimeout(promise) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Failed(`no result within ${SCENARIO_TIMEOUT_MS / 1000}s`)), SCENARIO_TIMEOUT_MS);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
    console.log(`gateway-e2e ${SUITE} ${through}: ${SDK}; ${command.join(' ')}`);
    const expected = expectedFailures();
    const outcomes = {};
    const failures = [];
    const known = [];
    let passed = 0;
    const client = makeClient();
    const { transport, note } = makeTransport();
    let connectError = null;
    try {
        await withTimeout(client.connect(transport));
        const receive = transport.onmessage;
        transport.onmessage = (message, extra) => {
            note('in', message);
            receive(message, extra);
        };
    } catch (error) {
        connectError = error instanceof Failed ? error.message : said(error);
    }
    for (const [name, scenario] of Object.entries(scenarios)) {
        if (args.only && args.only !== name) continue;
        seen.scenario = name;
        const label = `${through} ${name}`;
        let why = connectError ? `the handshake failed: ${connectError}` : null;
        if (!why) {
            try {
                await withTimeout(scenario(client));
            } catch (error) {
                why = error instanceof Failed ? error.message : said(error);
            }
        }
        outcomes[name] = why;
        if (expected.has(name)) {
            if (why === null) {
                why = `passes, but is listed in expected-failures.txt (${expected.get(name)}): take it off the list`;
            } else {
                known.push(`${label}: ${why}`);
                console.log(`known  ${SUITE} ${label}: ${why} [${expected.get(name)}]`);
                continue;
            }
        }
        if (why === null) {
            passed++;
            console.log(`ok     ${SUITE} ${label}`);
        } else {
            failures.push(`${label}: ${why}`);
            console.log(`FAILED ${SUITE} ${label}: ${why}`);
        }
    }
    seen.scenario = null;
    await client.close().catch(() => {});
    const transcript = {
        client: SDK,
        server: command,
        through,
        outcomes,
        passed,
        failed: failures.length,
        observed,
        events: seen.events,
        wire: seen.wire
    };
    writeFileSync(args.out, JSON.stringify(transcript, null, 2) + '\n');
    if (known.length) console.log(`${SUITE}: ${known.length} known failure(s), listed in ${EXPECTED_FAILURES}`);
    if (failures.length) {
        console.log(`\n${SUITE} ${through}: ${failures.length} scenario(s) failed (transcript ${resolve(args.out)}${args.log ? `, server log ${resolve(args.log)}` : ''}):`);
        for (const failure of failures) console.log(`  - ${failure}`);
    }
    if (direct) {
        // The suite's count: both runs (the direct run must have passed to get here).
        console.log(`${SUITE}: ${passed + direct.passed} passed, ${failures.length + direct.failed} failed`);
    } else {
        console.log(`${SUITE} direct: ${passed} passed, ${failures.length} failed`);
    }
    process.exit(failures.length ? 1 : 0);
}

await main();
