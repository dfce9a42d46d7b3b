// What the browser checks share: a failed check, a wait with a limit, and
// the script errors of the inbox's pages, a free port, a suite's checks.

import { createServer } from 'node:net';
import { join } from 'node:path';

/** A check that failed, with why. */
export class Failed extends Error {}

export function check(condition, message) {
    if (!condition) throw new Failed(message);
}

/** `promise`, or a failure saying `what` gave nothing within `ms`. */
export function within(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Failed(`${what}: nothing within ${ms / 1000}s`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Record in `errors` what goes wrong in `page`'s scripts (errors, CSP
 * violations) while `ours()` says the page is the inbox's. A 4xx page
 * (422, 403, 410) is logged by Chromium as a failed load: expected here. */
export function watchScripts(page, name, errors, ours = () => true) {
    page.on('pageerror', error => ours() && errors.push(`${name}: ${error.message}`));
    page.on('console', message => {
        if (message.type() !== 'error' || !ours()) return;
        const text = message.text();
        if (/^Failed to load resource: the server responded with a status of 4\d\d/.test(text)) return;
        errors.push(`${name}: ${text}`);
    });
    return page;
}

/** A port free on `host` now. */
export function freePort(host = '127.0.0.1') {
    return new Promise((yes, no) => {
        const server = createServer();
        server.once('error', no);
        server.listen(0, host, () => {
            const { port } = server.address();
            server.close(() => yes(port));
        });
    });
}

/** A suite's checks: each run by name, `ok NAME` or `FAIL NAME: why`
 * printed, the page it was on (`checks.page`) saved as
 * FAIL-SUITE-NAME.png when it fails; then the tally, and the exit code. */
export class Checks {
    constructor(suite, shots) {
        this.suite = suite;
        this.shots = shots;
        this.passed = 0;
        this.failed = 0;
        this.page = null;
    }

    async run(name, body) {
        this.page = null;
        try {
            await body();
            this.passed++;
            console.log(`ok ${name}`);
        } catch (error) {
            this.failed++;
            const why = error instanceof Failed ? error.message : `${error?.name}: ${error?.message ?? error}`;
            console.log(`FAIL ${name}: ${why.split('\n')[0]}`);
            const path = join(this.shots, `FAIL-${this.suite}-${name}.png`);
            if (this.page) await this.page.screenshot({ path, fullPage: true }).catch(() => {});
        }
    }

    /** Run `main`, its setup failing counted as one failure; print the
     * tally and exit. */
    async main(main) {
        try {
            await main();
        } catch (error) {
            this.failed++;
            console.log(`FAIL setup: ${error?.message ?? error}`);
        }
        console.log(`${this.suite}: ${this.passed} passed, ${this.failed} failed`);
        process.exit(this.failed ? 1 : 0);
    }
}
