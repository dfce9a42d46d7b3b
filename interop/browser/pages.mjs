// The inbox's pages as a person sees them (issue 21): each page checked
// by axe-core (0 serious or critical violations) in light, dark and on a
// phone, with screenshots, pending and settled; nothing wider than a 320
// px screen; a confirmation decided with one button, or its key (y / n);
// a form answered with the keyboard
// alone, its pre-filled defaults (an integer, an instant in its zone)
// submitted unchanged. Served by `askgate inbox` over a store the asks are
// parked in with `askgate ask`.
//
//   node pages.mjs --askgate BIN --chromium BIN --modules NODE_MODULES \
//        --scratch DIR --shots DIR --logs DIR
// Prints `ok NAME` or `FAIL NAME: why` per check, then
// `browser-pages: N passed, N failed`; exits non-zero when a check failed.

import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { Checks, check, freePort, watchScripts, within } from './support.mjs';

const { values: args } = parseArgs({
    options: Object.fromEntries(['askgate', 'chromium', 'modules', 'scratch', 'shots', 'logs'].map(k => [k, { type: 'string' }]))
});
for (const [key, value] of Object.entries(args)) if (!value) throw new Error(`--${key} is required`);

const requireFrom = createRequire(join(resolve(args.modules), 'browser.cjs'));
const { chromium } = requireFrom('playwright-core');
const AXE = requireFrom.resolve('axe-core/axe.min.js');

const askgate = resolve(args.askgate);
const scratch = resolve(args.scratch);
const [shots, logs] = [resolve(args.shots), resolve(args.logs)];
const storeUrl = `sqlite://${join(scratch, 'pages.db')}`;
const TOKEN = 'pages-operator-token-0123456789';
const WAIT_MS = 15_000;
const LOOKS = {
    light: { viewport: { width: 1280, height: 900 }, colorScheme: 'light' },
    dark: { viewport: { width: 1280, height: 900 }, colorScheme: 'dark' },
    mobile: { viewport: { width: 390, height: 844 }, colorScheme: 'light', isMobile: true, hasTouch: true }
};

/** Park `form` with `askgate ask` as a call of `tool`: its id. */
function park(name, form, tool, risk, more = []) {
    const file = join(scratch, `${name}.json`);
    writeFileSync(file, JSON.stringify(form));
    const printed = execFileSync(
        askgate,
        ['ask', file, '--store', storeUrl, '--json', '--principal', 'ci', '--server', 'deployer', '--tool', tool, '--risk', risk, ...more],
        { encoding: 'utf8', timeout: 30_000 }
    );
    return JSON.parse(printed).id;
}

function shown(id) {
    return JSON.parse(execFileSync(askgate, ['asks', 'show', id, '--store', storeUrl, '--json'], { encoding: 'utf8', timeout: 30_000 }));
}

const scriptErrors = [];
const checks = new Checks('browser-pages', shots);
const run = (name, body) => checks.run(name, body);

/** axe-core's serious and critical violations on `page`, a line each. */
async function violations(page) {
    await page.addScriptTag({ path: AXE });
    const found = await page.evaluate(async () => {
        const result = await window.axe.run(document, { resultTypes: ['violations'] });
        return result.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 3) }));
    });
    return found.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => `${v.id} (${v.impact}) at ${v.nodes.join(', ')}`);
}

/** Each of `pages` (name -> path) in `look`, screenshot and checked by
 * axe-core: none may have a serious or critical violation. */
async function checkLooks(browser, base, look, pages) {
    const { context, page } = await signedIn(browser, base, look);
    const found = [];
    for (const [name, path] of Object.entries(pages)) {
        checks.page = page;
        await page.goto(`${base}${path}`);
        await page.screenshot({ path: join(shots, `pages-${name}-${look}.png`), fullPage: true });
        for (const v of await violations(page)) found.push(`${name}: ${v}`);
    }
    check(found.length === 0, found.join(' | '));
    await context.close();
}

async function signedIn(browser, base, look) {
    // axe-core is injected as a script: the inbox's own CSP would refuse it.
    const context = await browser.newContext({ ...LOOKS[look], bypassCSP: true });
    context.setDefaultTimeout(WAIT_MS);
    const page = watchScripts(await context.newPage(), look, scriptErrors);
    await page.goto(`${base}login`);
    await page.fill('#token', TOKEN);
    await Promise.all([page.waitForURL(base), page.click('main form button[type=submit]')]);
    return { context, page };
}

async function main() {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}/`;
    const config = join(scratch, 'pages.toml');
    writeFileSync(
        config,
        `store = ${JSON.stringify(storeUrl)}\n\n[[upstreams]]\nname = "deployer"\ncommand = "true"\n\n[inbox]\ntoken = ${JSON.stringify(TOKEN)}\n`
    );
    const inbox = spawn(askgate, ['inbox', '--config', config, '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    inbox.stderr.pipe(createWriteStream(join(logs, 'inbox-pages.log')));
    const serving = new Promise((yes, no) => {
        createInterface({ input: inbox.stderr }).on('line', line => line.includes('serving') && yes());
        inbox.once('exit', code => no(new Error(`askgate inbox exited ${code} (see ${logs}/inbox-pages.log)`)));
    });
    const browser = await chromium.launch({ executablePath: resolve(args.chromium), headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    try {
        await within(serving, WAIT_MS, 'askgate inbox serving');
        const pages = { 'sign-in': 'login' };
        await run('empty-list', async () => {
            const { context, page } = await signedIn(browser, base, 'light');
            checks.page = page;
            check(/No pending asks/.test(await page.locator('#asks').innerText()), 'the empty list says nothing');
            await page.screenshot({ path: join(shots, 'pages-empty-light.png'), fullPage: true });
            await context.close();
        });
        const confirm = park('confirm', {
            message: 'Allow deployer to run ship? Risk: destructive.',
            fields: [{ id: 'confirm', title: 'Run ship', type: 'boolean', default: true }]
        }, 'ship', 'destructive');
        const form = park('form', {
            message: 'Deploy web to production?',
            fields: [
                { id: 'replicas', title: 'Replicas', type: 'integer', minimum: 1, maximum: 5, default: 2 },
                { id: 'at', title: 'Start at', type: 'instant', zone: 'Europe/Paris', default: '2026-12-01T21:00:00Z' },
                { id: 'env', title: 'Environment', type: 'choice', default: 'staging', options: [
                    { value: 'staging', label: 'Staging', hotkey: 's' }, { value: 'prod', label: 'Production', hotkey: 'p' }] }
            ]
        }, 'deploy', 'high_write');
        const stop = park('stop', {
            message: 'Allow deployer to run drop_db? Risk: destructive.',
            fields: [{ id: 'confirm', title: 'Run drop_db', type: 'boolean', default: true }]
        }, 'drop_db', 'destructive');
        // Nobody answers it: expired by the time the settled pages are read.
        const late = park('late', {
            message: 'Allow deployer to run rotate_keys? Risk: high write.',
            fields: [{ id: 'confirm', title: 'Run rotate_keys', type: 'boolean', default: true }]
        }, 'rotate_keys', 'high_write', ['--timeout', '1s']);
        Object.assign(pages, { list: '', confirmation: `asks/${confirm}`, form: `asks/${form}` });

        for (const look of Object.keys(LOOKS)) {
            await run(`axe-${look}`, () => checkLooks(browser, base, look, pages));
        }

        await run('narrow-screen', async () => {
            const context = await browser.newContext({ viewport: { width: 320, height: 640 } });
            const page = await context.newPage();
            await page.goto(`${base}login`);
            await page.fill('#token', TOKEN);
            await Promise.all([page.waitForURL(base), page.click('main form button[type=submit]')]);
            const wide = [];
            for (const [name, path] of Object.entries(pages)) {
                checks.page = page;
                await page.goto(`${base}${path}`);
                const width = await page.evaluate(() => document.documentElement.scrollWidth);
                if (width > 320) wide.push(`${name}: ${width}px`);
            }
            check(wide.length === 0, `pages wider than 320px: ${wide.join(', ')}`);
            await context.close();
        });

        await run('defaults-pre-filled', async () => {
            const { context, page } = await signedIn(browser, base, 'light');
            checks.page = page;
            await page.goto(`${base}asks/${form}`);
            check((await page.inputValue('input[name="f.replicas"]')) === '2', 'the integer default is not in its input');
            // 21:00 UTC is 22:00 in Paris that day.
            const at = await page.inputValue('input[name="f.at"]');
            check(at === '2026-12-01T22:00', `the instant's input holds ${JSON.stringify(at)}, expected 2026-12-01T22:00 (Paris)`);
            check(await page.isChecked('input[name="f.env"][value="staging"]'), 'the choice default is not picked');
            await context.close();
        });

        await run('keyboard-only-form', async () => {
            const { context, page } = await signedIn(browser, base, 'light');
            checks.page = page;
            await page.goto(`${base}asks/${form}`);
            // Tab from the top of the page to the first field, then Enter:
            // the form is sent as it was filled in.
            let focused = '';
            for (let i = 0; i < 15 && focused !== 'f.replicas'; i++) {
                await page.keyboard.press('Tab');
                focused = await page.evaluate(() => document.activeElement?.getAttribute('name') ?? '');
            }
            check(focused === 'f.replicas', 'Tab never reached the first field');
            const [posted] = await Promise.all([
                page.waitForResponse(r => r.request().method() === 'POST' && r.url() === `${base}asks/${form}`),
                page.keyboard.press('Enter')
            ]);
            check(posted.status() === 303, `Enter sent the form and got ${posted.status()}`);
            await page.waitForLoadState();
            const row = shown(form);
            const said = (await page.locator('main').innerText()).replace(/\s+/g, ' ').slice(0, 300);
            check(row.status === 'answered', `the form is ${row.status} after Enter: ${said}`);
            const values = row.outcome?.values ?? {};
            check(values.replicas?.value === 2, `replicas: ${JSON.stringify(values.replicas)}`);
            // The same instant as the default, whatever offset it is written with.
            check(Date.parse(values.at?.value) === Date.parse('2026-12-01T21:00:00Z'), `at: ${JSON.stringify(values.at)}`);
            check(values.env?.value === 'staging', `env: ${JSON.stringify(values.env)}`);
            await context.close();
        });

        await run('confirmation-one-decision', async () => {
            const { context, page } = await signedIn(browser, base, 'light');
            checks.page = page;
            await page.goto(`${base}asks/${confirm}`);
            check((await page.locator('input[type=checkbox]').count()) === 0, 'a checkbox beside the decision');
            const run = page.locator('button[name=action][value=accept]');
            check(/^Run ship\s+y$/.test((await run.innerText()).trim()), `the button says ${JSON.stringify(await run.innerText())}`);
            check(/^Don't run\s+n$/.test((await page.locator('button[name=action][value=decline]').innerText()).trim()), 'no "Don\'t run" with its key');
            check(/not sent; the agent is told a person said no/.test(await page.locator('ul.next').innerText()), 'what happens next is not said');
            await run.focus();
            await Promise.all([
                page.waitForResponse(r => r.request().method() === 'POST' && r.url() === `${base}asks/${confirm}`),
                page.keyboard.press('Enter')
            ]);
            const row = shown(confirm);
            check(row.status === 'answered' && row.reply?.content?.confirm === true, `the confirmation is ${row.status}: ${JSON.stringify(row.reply)}`);
            await context.close();
        });

        await run('confirmation-hotkey', async () => {
            const { context, page } = await signedIn(browser, base, 'light');
            checks.page = page;
            await page.goto(`${base}asks/${stop}`);
            await Promise.all([
                page.waitForResponse(r => r.request().method() === 'POST' && r.url() === `${base}asks/${stop}`),
                page.keyboard.press('n')
            ]);
            const row = shown(stop);
            check(row.status === 'declined', `after n the confirmation is ${row.status}`);
            await context.close();
        });

        await run('expired-read-only', async () => {
            const { context, page } = await signedIn(browser, base, 'light');
            checks.page = page;
            await page.goto(`${base}asks/${late}`);
            const text = await page.locator('main').innerText();
            check(/This ask is expired/.test(text), `the late ask's page: ${text.slice(0, 200)}`);
            check(await page.locator('main form.answer, main button[type=submit]').count() === 0, 'an expired ask offers no answer');
            check(shown(late).status === 'expired', `the store says ${shown(late).status}`);
            await context.close();
        });

        for (const look of ['light', 'dark']) {
            const settled = { answered: `asks/${form}`, declined: `asks/${stop}`, expired: `asks/${late}`, 'settled-tab': '?status=settled' };
            await run(`axe-settled-${look}`, () => checkLooks(browser, base, look, settled));
        }

        await run('no-script-errors', async () => {
            check(scriptErrors.length === 0, scriptErrors.join(' | '));
        });
    } finally {
        await browser.close().catch(() => {});
        inbox.kill();
    }
}

await checks.main(main);
