// What the browser checks share: a failed check, a wait with a limit, and
// the script errors of the inbox's pages.

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
