// Gateway end to end: the TypeScript MCP SDK (npm `@modelcontextprotocol/sdk`,
// Client + StdioClientTransport) as the client of the real `askgate gateway`,
// which has three real upstreams behind it (see scripts/gateway-e2e.sh):
// - `everything`: npm @modelcontextprotocol/server-everything
// - `files`:      npm @modelcontextprotocol/server-filesystem, rooted in --root
// - `notes`:      the repository's askgate-example-upstream, notes in --notes
//
// A scripted person answers through the SDK's `elicitation/create` request
// handler, like a person: after reading for PERSON_READS_MS, longer than the
// gateway's `min_answer_ms` (250 ms by default; an answer sooner was shown to
// nobody). Each scenario spawns the gateway afresh and checks what the person
// was asked, what the tool returned, what the upstream did (files on disk)
// and what the store recorded (`askgate asks|audit --json`). The config sets
// no `caller_confirm`: only a person approves.
// - tools:         every upstream's tools are listed as <server>__<tool>;
//                  no tool offers `confirm` (the caller may stand in for
//                  nobody), gated tools carry their risk in the description
// - read:          a tool a rule makes `read` runs without asking anyone
// - write-accept:  a write is confirmed through elicitation, then runs,
//                  audited as elicited
// - write-decline: declined after reading: a blocked result that says the
//                  no is final, the file is not written; the same call
//                  again (even with `confirm: true`) is refused without asking
// - destructive-no-elicitation: a client without elicitation: the ask waits
//                  in the inbox (pending in the store; the text names the
//                  inbox's page and no command; the note not deleted); the
//                  same call with `confirm: true` still waits; the person
//                  answers with `askgate asks answer` (their token in
//                  ASKGATE_TOKEN) and the retry runs once, audited as
//                  elicited via the CLI; the call made once more waits again
// - headless:      a client that declines every elicitation at once (as
//                  `claude -p` or `codex exec` do): the write does not run
//                  and waits in the inbox, audited `waiting` / "not shown:
//                  the client declined ..."; the person answers with the CLI
//                  and the retry writes the file, audited as elicited via the CLI
// - relay-everything, relay-notes: the upstream's own elicitation reaches
//                  the person, and the answer reaches the upstream
// - audit:         the decisions made above (not_required, elicited,
//                  blocked, waiting; never caller_confirmed) are in the audit
//                  chain, without argument values, and `askgate audit verify`
//                  passes
//
//   ASKGATE_TOKEN=... node typescript_client.mjs --askgate BIN --config FILE --store URL \
//        --root DIR --notes DIR --logs DIR --modules NODE_MODULES --person NAME
//
// Prints `typescript: N passed, N failed`; exits non-zero when a scenario fails
// that expected-failures.txt does not list, or passes although it is listed.

import { execFileSync } from 'node:child_process';
import { existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const SCENARIO_TIMEOUT_MS = 60_000;
const EXPECTED_FAILURES = fileURLToPath(new URL('expected-failures.txt', import.meta.url));
const ELICITING_TOOL = 'everything__trigger-elicitation-request';
// How long the scripted person reads an ask before answering: longer than the
// gateway's min_answer_ms (250 ms by default), under which an answer counts as
// shown to nobody.
const PERSON_READS_MS = 300;
// Where a waiting ask is, in the text the model gets: its inbox page.
const INBOX_PAGE = /https?:\/\/[^\s()]+\/asks\/(ask_[A-Za-z0-9_-]+)/;

const { values: args } = parseArgs({
    options: {
        askgate: { type: 'string' },
        config: { type: 'string' },
        store: { type: 'string' },
        root: { type: 'string' },
        notes: { type: 'string' },
        logs: { type: 'string' },
        modules: { type: 'string' },
        person: { type: 'string' },
        only: { type: 'string' }
    }
});
for (const required of ['askgate', 'config', 'store', 'root', 'notes', 'logs', 'modules', 'person']) {
    if (!args[required]) {
        console.error(
            'usage: ASKGATE_TOKEN=... node typescript_client.mjs --askgate BIN --config FILE --store URL --root DIR --notes DIR --logs DIR --modules NODE_MODULES --person NAME [--only SCENARIO]'
        );
        process.exit(2);
    }
}
// The person's token answers from the CLI only: the gateways started here
// (the agent's side) never get it in their environment.
const personToken = process.env.ASKGATE_TOKEN ?? '';
delete process.env.ASKGATE_TOKEN;
if (!personToken) {
    console.error('typescript_client.mjs: set ASKGATE_TOKEN to the token of the person --person names');
    process.exit(2);
}
const askgate = resolve(args.askgate);
const root = resolve(args.root);
const notes = resolve(args.notes);
const requireFrom = createRequire(join(resolve(args.modules), 'gateway-e2e.cjs'));
const { Client } = requireFrom('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireFrom('@modelcontextprotocol/sdk/client/stdio.js');
const { ElicitRequestSchema } = requireFrom('@modelcontextprotocol/sdk/types.js');
// Read from the folder: the package's `exports` hide its package.json.
const version = JSON.parse(readFileSync(join(resolve(args.modules), '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8')).version;
const SDK = `@modelcontextprotocol/sdk ${version}`;
const gatewayLog = join(resolve(args.logs), 'typescript-gateway.log');
writeFileSync(gatewayLog, '');

class Failed extends Error {}

function check(condition, message) {
    if (!condition) throw new Failed(message);
}

function same(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
}

/** `askgate asks|audit ... --store URL --config FILE --json`; `answer` as the
 * config's person, their token in ASKGATE_TOKEN (never on a command line). */
const store = {
    run(argv, env = process.env) {
        try {
            return execFileSync(askgate, [...argv, '--store', args.store, '--config', args.config, '--json'], {
                encoding: 'utf8',
                timeout: 30_000,
                env,
                stdio: ['ignore', 'pipe', 'pipe']
            });
        } catch (error) {
            throw new Failed(`\`askgate ${argv.join(' ')}\` exited ${error.status}: ${String(error.stderr ?? error.message).trim()}`);
        }
    },
    pending() {
        return JSON.parse(this.run(['asks', 'list'])).asks;
    },
    answer(id, content) {
        const env = { ...process.env, ASKGATE_TOKEN: personToken };
        return JSON.parse(this.run(['asks', 'answer', id, '--content', JSON.stringify(content)], env));
    },
    auditText() {
        return this.run(['audit', 'list']);
    },
    audit() {
        return JSON.parse(this.auditText()).map(record => record.entry);
    },
    verify() {
        const verification = JSON.parse(this.run(['audit', 'verify']));
        check(verification.broken === null, `the audit chain is broken: ${JSON.stringify(verification)}`);
        check(verification.entries > 0, `the audit chain is empty: ${JSON.stringify(verification)}`);
    }
};

/** The decisions audited for `server`/`tool`, oldest first. */
function decisions(entries, server, tool) {
    return entries.filter(e => e.server === server && e.tool === tool).map(e => e.decision);
}

/** The audit entries for `server`/`tool`, oldest first. */
function entriesOf(entries, server, tool) {
    return entries.filter(e => e.server === server && e.tool === tool);
}

/** A scripted person: reads each ask for `readsMs`, then gives its answers in
 * order; records each ask. `readsMs = 0` is no person at all: a client that
 * answers before anyone could have read the ask. */
class Person {
    constructor(...answers) {
        this.answers = answers;
        this.readsMs = PERSON_READS_MS;
        this.asked = [];
    }
    static headless(...answers) {
        const client = new Person(...answers);
        client.readsMs = 0;
        return client;
    }
    async answer(params) {
        check(params.mode === undefined || params.mode === 'form', `the person expected a form, got ${JSON.stringify(params)}`);
        this.asked.push(params);
        const next = this.answers.shift();
        if (!next) throw new Error(`the scripted person was asked more than expected: ${JSON.stringify(params.message)}`);
        const [action, content] = next;
        if (this.readsMs) await new Promise(r => setTimeout(r, this.readsMs));
        return content === undefined ? { action } : { action, content };
    }
}

/** A client on a freshly spawned gateway; with `person`, it declares elicitation. Run `body`, then close. */
async function withSession(person, body) {
    const capabilities = person ? { elicitation: { form: {} } } : {};
    const client = new Client({ name: 'askgate-gateway-e2e', version: '0' }, { capabilities });
    if (person) client.setRequestHandler(ElicitRequestSchema, request => person.answer(request.params));
    const transport = new StdioClientTransport({
        command: askgate,
        args: ['gateway', '--config', args.config],
        env: { ...process.env, ASKGATE_LOG: process.env.ASKGATE_LOG ?? 'info' },
        stderr: openSync(gatewayLog, 'a')
    });
    await client.connect(transport);
    try {
        return await body(client);
    } finally {
        await client.close();
    }
}

function text(result) {
    return (result.content ?? [])
        .filter(block => block.type === 'text')
        .map(block => block.text)
        .join('\n');
}

function succeeded(result, what) {
    check(!result.isError, `${what} failed: ${JSON.stringify(text(result))}`);
    return text(result);
}

function blocked(result, what) {
    check(result.isError === true, `${what} was not blocked: ${JSON.stringify(text(result))}`);
    return text(result);
}

/** The id of the ask a call waits on: the text says it waits in the inbox,
 * names the inbox page, asks for the same call again, and names no command
 * (nothing the model could run to approve it). */
function waitingAsk(said, tool) {
    check(said.includes('waits in the askgate inbox'), `the result does not say the ask waits in the inbox: ${JSON.stringify(said)}`);
    check(said.includes(`call ${tool} again with the same arguments`), `the result does not say to retry ${tool}: ${JSON.stringify(said)}`);
    check(!said.includes('askgate asks'), `the result names a command: ${JSON.stringify(said)}`);
    const found = INBOX_PAGE.exec(said);
    check(found, `the result does not name the ask's inbox page: ${JSON.stringify(said)}`);
    return found[1];
}

/** An audit entry for a call that waits in the inbox, for `reason`. */
function checkWaiting(entry, reason) {
    check(entry?.decision === 'waiting', `audited ${entry?.decision}, expected waiting: ${JSON.stringify(entry)}`);
    check(entry.reason.startsWith(reason), `audited the reason ${JSON.stringify(entry.reason)}, expected ${JSON.stringify(reason)}...`);
}

/** An audit entry for a call the person confirmed with `askgate asks answer`. */
function checkAnsweredInCli(entry, askId) {
    check(entry?.decision === 'elicited', `audited ${entry?.decision}, expected elicited: ${JSON.stringify(entry)}`);
    check(entry.ask_id === askId, `the decision does not name the ask ${askId}: ${JSON.stringify(entry)}`);
    check(entry.answered_via === 'cli', `the decision says it was answered via ${JSON.stringify(entry.answered_via)}`);
    check(
        entry.answered_by === args.person,
        `the decision says it was answered by ${JSON.stringify(entry.answered_by)}, expected the person ${JSON.stringify(args.person)}`
    );
}

/** The person was asked once, to confirm `tool`, with one pre-ticked checkbox. */
function checkConfirmation(person, tool) {
    check(person.asked.length === 1, `the person was asked ${person.asked.length} times, expected once`);
    const ask = person.asked[0];
    check(ask.message.includes(tool), `the confirmation does not name ${tool}: ${JSON.stringify(ask.message)}`);
    const props = ask.requestedSchema?.properties ?? {};
    check(same(Object.keys(props), ['confirm']), `the confirmation asks ${Object.keys(props)}, expected only confirm`);
    check(props.confirm.type === 'boolean', `confirm is not a boolean: ${JSON.stringify(props.confirm)}`);
    check(props.confirm.default === true, `confirm is not pre-ticked: ${JSON.stringify(props.confirm)}`);
}

async function allTools(client) {
    const tools = new Map();
    let cursor;
    do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        for (const tool of page.tools) tools.set(tool.name, tool);
        cursor = page.nextCursor;
    } while (cursor);
    return tools;
}

const scenarios = {
    async tools() {
        const listed = await withSession(new Person(), allTools);
        const expected = [
            'everything__echo',
            ELICITING_TOOL,
            'files__read_text_file',
            'files__write_file',
            'files__edit_file',
            'notes__read_note',
            'notes__append_note',
            'notes__delete_all_notes',
            'notes__ask_name'
        ];
        const missing = expected.filter(name => !listed.has(name));
        check(missing.length === 0, `not listed: ${missing}; listed: ${[...listed.keys()].sort()}`);
        // Besides the upstreams' tools, only askgate's own `ask` tool (offer_ask_tool, default on).
        const unprefixed = [...listed.keys()].filter(name => !/^(everything|files|notes)__/.test(name) && name !== 'ask');
        check(unprefixed.length === 0, `listed without a server's namespace: ${unprefixed}`);
        // No caller_confirm in the config: the caller's word stands in for no
        // person, so no tool offers `confirm`, gated or not.
        for (const name of ['files__write_file', 'files__edit_file', 'notes__delete_all_notes']) {
            const schema = listed.get(name).inputSchema;
            const props = schema.properties ?? {};
            check(!('confirm' in props), `${name} offers confirm, which the config allows for no risk: ${Object.keys(props)}`);
            check(!(schema.required ?? []).includes('confirm'), `${name} requires confirm: ${JSON.stringify(schema)}`);
        }
        for (const name of ['files__read_text_file', 'everything__echo']) {
            const props = listed.get(name).inputSchema.properties ?? {};
            check(!('confirm' in props), `${name} is a read but offers confirm`);
        }
        const described = listed.get('notes__delete_all_notes').description ?? '';
        check(described.includes('[askgate: risk destructive]'), `the risk is not in the description: ${JSON.stringify(described)}`);
    },

    async read() {
        const file = join(root, 'readme.txt');
        writeFileSync(file, 'read me, no questions asked\n');
        const person = new Person();
        const [got, echoed] = await withSession(person, async client => [
            succeeded(await client.callTool({ name: 'files__read_text_file', arguments: { path: file } }), 'the file read'),
            succeeded(await client.callTool({ name: 'everything__echo', arguments: { message: 'hello askgate' } }), 'echo')
        ]);
        check(got.includes('read me, no questions asked'), `read ${JSON.stringify(got)}`);
        check(echoed.includes('hello askgate'), `echo returned ${JSON.stringify(echoed)}`);
        check(person.asked.length === 0, `a read asked the person: ${person.asked.map(a => a.message)}`);
        check(same(decisions(store.audit(), 'files', 'read_text_file'), ['not_required']), 'the read is not audited as not_required');
    },

    async 'write-accept'() {
        const file = join(root, 'accepted.txt');
        const person = new Person(['accept', { confirm: true }]);
        const result = await withSession(person, client =>
            client.callTool({ name: 'files__write_file', arguments: { path: file, content: 'written after a yes' } })
        );
        succeeded(result, 'the confirmed write');
        checkConfirmation(person, 'write_file');
        check(existsSync(file) && readFileSync(file, 'utf8') === 'written after a yes', `${file} was not written as asked`);
        check(decisions(store.audit(), 'files', 'write_file').at(-1) === 'elicited', 'the write is not audited as elicited');
    },

    async 'write-decline'() {
        const file = join(root, 'declined.txt');
        const person = new Person(['decline']);
        const result = await withSession(person, client =>
            client.callTool({ name: 'files__write_file', arguments: { path: file, content: 'never written' } })
        );
        const said = blocked(result, 'the declined write');
        checkConfirmation(person, 'write_file');
        check(said.includes('declined') && said.includes('final'), `the result does not say the decline is final: ${JSON.stringify(said)}`);
        check(!existsSync(file), `${file} was written although the person declined`);
        check(decisions(store.audit(), 'files', 'write_file').at(-1) === 'blocked', 'the decline is not audited as blocked');

        // The person's no stands for the same call, with or without confirm:
        // refused again without asking anyone.
        const again = new Person();
        const retried = await withSession(again, client =>
            client.callTool({ name: 'files__write_file', arguments: { path: file, content: 'never written', confirm: true } })
        );
        const saidAgain = blocked(retried, 'the declined write made again with confirm: true');
        check(
            saidAgain.includes('already declined'),
            `the call made again does not say a person declined it: ${JSON.stringify(saidAgain)}`
        );
        check(again.asked.length === 0, `the call made again asked the person again: ${again.asked.map(a => a.message)}`);
        check(!existsSync(file), `${file} was written on a call a person had declined`);
        check(decisions(store.audit(), 'files', 'write_file').at(-1) === 'blocked', 'the call made again is not blocked');
    },

    async 'destructive-no-elicitation'() {
        const note = join(notes, 'doomed.txt');
        const call = args => ({ name: 'notes__delete_all_notes', arguments: args });
        const lastEntry = () => entriesOf(store.audit(), 'notes', 'delete_all_notes').at(-1);
        await withSession(null, async client => {
            // low_write: proceeds without asking, even without elicitation.
            succeeded(await client.callTool({ name: 'notes__append_note', arguments: { name: 'doomed', text: 'x' } }), 'append_note');
            check(existsSync(note), `append_note did not write ${note}`);
            let said = blocked(await client.callTool(call({})), 'delete_all_notes without elicitation');
            check(said.includes('cannot show a confirmation'), `the result does not say why the call waits: ${JSON.stringify(said)}`);
            const askId = waitingAsk(said, 'notes__delete_all_notes');
            const pending = store.pending().find(row => row.id === askId);
            check(pending?.status === 'pending', `${askId} is not pending in the store: ${JSON.stringify(pending)}`);
            check(existsSync(note), 'the note was deleted while the ask waited');
            checkWaiting(lastEntry(), 'this client cannot show a confirmation');

            // The caller's confirm: true is the same call, and stands in for nobody.
            said = blocked(await client.callTool(call({ confirm: true })), 'delete_all_notes with confirm: true');
            check(waitingAsk(said, 'notes__delete_all_notes') === askId, `confirm: true made a new ask: ${JSON.stringify(said)}`);
            check(existsSync(note), "the caller's confirm: true deleted the note");
            const refused = lastEntry();
            checkWaiting(refused, 'an ask for this exact call already waits for a person');
            check(
                refused.reason.includes('confirm: true was not taken'),
                `the audit does not say confirm was refused: ${JSON.stringify(refused)}`
            );

            // The person answers in the inbox (here its CLI); the retry runs once.
            const answered = store.answer(askId, { confirm: true });
            check(answered.status === 'answered', `the CLI answer left the ask ${JSON.stringify(answered.status)}`);
            const done = succeeded(await client.callTool(call({})), 'delete_all_notes after the answer');
            check(done.includes('deleted 1 notes'), `the upstream said ${JSON.stringify(done)}`);
            check(!existsSync(note), `${note} survived the confirmed delete`);
            checkAnsweredInCli(lastEntry(), askId);

            // The answer confirmed one call: the same call once more waits again.
            succeeded(await client.callTool({ name: 'notes__append_note', arguments: { name: 'doomed', text: 'y' } }), 'append_note');
            said = blocked(await client.callTool(call({})), 'delete_all_notes once more');
            check(waitingAsk(said, 'notes__delete_all_notes') !== askId, `the answered ask was taken again: ${JSON.stringify(said)}`);
            check(existsSync(note), 'one answer deleted the notes twice');
        });
        const audited = decisions(store.audit(), 'notes', 'delete_all_notes');
        check(same(audited, ['waiting', 'waiting', 'elicited', 'waiting']), `audited ${audited}`);
    },

    async headless() {
        const file = join(root, 'headless.txt');
        const call = { name: 'files__write_file', arguments: { path: file, content: 'written once a person said yes' } };
        const lastEntry = () => entriesOf(store.audit(), 'files', 'write_file').at(-1);
        // Declines at once, before anyone could read the ask: nobody was shown it.
        const client = Person.headless(['decline']);
        let askId;
        await withSession(client, async session => {
            const said = blocked(await session.callTool(call), 'the write from a headless client');
            check(client.asked.length === 1, `the client was asked ${client.asked.length} times, expected once`);
            check(!said.includes('final'), `a decline nobody read is taken as final: ${JSON.stringify(said)}`);
            check(
                said.includes('before a person could have read it'),
                `the result does not say why the call waits: ${JSON.stringify(said)}`
            );
            askId = waitingAsk(said, 'files__write_file');
            check(!existsSync(file), `${file} was written although nobody confirmed it`);
            const pending = store.pending().find(row => row.id === askId);
            check(pending?.status === 'pending', `${askId} is not pending in the store: ${JSON.stringify(pending)}`);
            checkWaiting(lastEntry(), 'not shown: the client declined');

            // The person answers in the inbox (here its CLI); the same call again runs.
            const answered = store.answer(askId, { confirm: true });
            check(answered.status === 'answered', `the CLI answer left the ask ${JSON.stringify(answered.status)}`);
            succeeded(await session.callTool(call), 'the write retried after the answer');
        });
        check(client.asked.length === 1, `the retry asked the client again (${client.asked.length} asks)`);
        check(existsSync(file) && readFileSync(file, 'utf8') === call.arguments.content, `${file} was not written as asked`);
        checkAnsweredInCli(lastEntry(), askId);
    },

    async 'relay-everything'() {
        const person = new Person(['accept', { name: 'Ada Lovelace', check: true }]);
        const said = await withSession(person, async client =>
            succeeded(await client.callTool({ name: ELICITING_TOOL, arguments: {} }), ELICITING_TOOL)
        );
        check(person.asked.length === 1, `the person was asked ${person.asked.length} times, expected once (the server's ask)`);
        const ask = person.asked[0];
        check(ask.message.includes('Please provide inputs'), `not the server's ask: ${JSON.stringify(ask.message)}`);
        const props = ask.requestedSchema?.properties ?? {};
        for (const name of ['name', 'check', 'email', 'integer', 'untitledSingleSelectEnum', 'titledMultipleSelectEnum']) {
            check(name in props, `the relayed schema lost ${name}: ${Object.keys(props)}`);
        }
        check(same(ask.requestedSchema.required, ['name']), `required: ${JSON.stringify(ask.requestedSchema.required)}`);
        check(said.includes('Name: Ada Lovelace'), `the answer did not reach the server: ${JSON.stringify(said)}`);
    },

    async 'relay-notes'() {
        const person = new Person(['accept', { name: 'Grace' }]);
        const said = await withSession(person, async client =>
            succeeded(await client.callTool({ name: 'notes__ask_name', arguments: {} }), 'ask_name')
        );
        check(person.asked.length === 1, `the person was asked ${person.asked.length} times, expected once`);
        check(person.asked[0].message === 'What is your name?', `not the server's ask: ${JSON.stringify(person.asked[0].message)}`);
        check(said.includes('Hello, Grace'), `the answer did not reach the server: ${JSON.stringify(said)}`);
    },

    async audit() {
        const raw = store.auditText();
        const values = ['written after a yes', 'never written', 'written once a person said yes', 'hello askgate', 'Ada Lovelace'];
        for (const value of [...values, 'Grace']) {
            check(!raw.includes(value), `an argument or answer value is in the audit log: ${JSON.stringify(value)}`);
        }
        const found = new Set(store.audit().map(e => e.decision));
        for (const decision of ['not_required', 'elicited', 'blocked', 'waiting']) {
            check(found.has(decision), `no ${decision} decision audited: ${[...found].sort()}`);
        }
        // No caller_confirm in the config: the caller's word never stood in.
        check(!found.has('caller_confirmed'), `a call was confirmed by its caller: ${[...found].sort()}`);
        store.verify();
    }
};

/** The scenarios of this suite known to fail, each with why (expected-failures.txt beside this file). */
function expectedFailures() {
    const known = new Map();
    for (const line of readFileSync(EXPECTED_FAILURES, 'utf8').split('\n')) {
        const [entry, ...why] = line.split('#');
        const words = entry.trim().split(/\s+/);
        if (words.length === 2 && words[0] === 'typescript') known.set(words[1], why.join('#').trim());
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
    console.log(`gateway-e2e typescript: ${SDK}`);
    const expected = expectedFailures();
    let passed = 0;
    const failures = [];
    const known = [];
    for (const [name, scenario] of Object.entries(scenarios)) {
        if (args.only && args.only !== name) continue;
        const label = `${SDK} ${name}`;
        let why = null;
        try {
            await withTimeout(scenario());
        } catch (error) {
            why = error instanceof Failed ? error.message : `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
        }
        if (expected.has(name)) {
            if (why === null) {
                why = `passes, but is listed in expected-failures.txt (${expected.get(name)}): take it off the list`;
            } else {
                known.push(`${label}: ${why}`);
                console.log(`known  typescript ${label}: ${why} [${expected.get(name)}]`);
                continue;
            }
        }
        if (why === null) {
            passed++;
            console.log(`ok     typescript ${label}`);
        } else {
            failures.push(`${label}: ${why}`);
            console.log(`FAILED typescript ${label}: ${why}`);
        }
    }
    if (known.length) console.log(`typescript: ${known.length} known failure(s), listed in ${EXPECTED_FAILURES}`);
    if (failures.length) {
        console.log(`\ntypescript: ${failures.length} scenario(s) failed (gateway logs in ${resolve(args.logs)}):`);
        for (const failure of failures) console.log(`  - ${failure}`);
    }
    console.log(`typescript: ${passed} passed, ${failures.length} failed`);
    process.exit(failures.length ? 1 : 0);
}

await main();
