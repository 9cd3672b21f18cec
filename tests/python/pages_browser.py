"""The pages in a real browser (Debian's Chromium, driven by Playwright): load the front page,
submit a search, follow a card, switch the language, and open every page that shows hostile
agent-written text, asserting that nothing ran and nothing broke.

Usage: pages_browser.py BASE_URL PLAN_JSON

PLAN_JSON names what the Rust test registered: {"hostile": handle, "benign": handle,
"call": id, "query": text the benign agent is found by, "hostile_texts": [exact texts that
must show as text]}. With AGENTDIR_PAGES_SCREENSHOTS=DIR, full-page screenshots of the pages
are written there (the ones in docs/pages/).

Script execution is detected four ways: a `window.__pwned` the payloads would set, `dialog`
events (alert/confirm/prompt), Content-Security-Policy violations (counted by an init script,
which Playwright runs outside the page's CSP), and console errors or uncaught page errors.
"""

import json
import os
import sys

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("AGENTDIR_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

WATCH = """
window.__csp_violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp_violations.push(e.violatedDirective + ' ' + (e.blockedURI || ''));
});
"""

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


class Watched:
    """A page with everything that would show a script ran, or the page broke, recorded."""

    def __init__(self, context, name):
        self.name = name
        self.page = context.new_page()
        self.events = []
        self.page.on("dialog", lambda d: (self.events.append("dialog: " + d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.events.append("pageerror: %s" % e))
        self.page.on(
            "console",
            lambda m: self.events.append("console %s: %s" % (m.type, m.text)) if m.type in ("error", "warning") else None,
        )

    def goto(self, url):
        r = self.page.goto(url, wait_until="load")
        return r

    def assert_clean(self, where):
        page = self.page
        pwned = page.evaluate("() => window.__pwned === undefined ? null : String(window.__pwned)")
        check(pwned is None, "%s: a payload ran (window.__pwned = %s)" % (where, pwned))
        violations = page.evaluate("() => window.__csp_violations || []")
        check(violations == [], "%s: CSP violations %s" % (where, violations))
        check(self.events == [], "%s: console/page events %s" % (where, self.events))
        dom = page.evaluate(
            """() => ({
              scripts: document.scripts.length,
              handlers: [...document.querySelectorAll('*')].flatMap(el =>
                  [...el.attributes].filter(a => a.name.startsWith('on')).map(a => el.tagName + '@' + a.name)),
              js_links: [...document.querySelectorAll('[href],[src],[action]')].map(el =>
                  el.getAttribute('href') || el.getAttribute('src') || el.getAttribute('action'))
                  .filter(v => /^\\s*(javascript|data|vbscript):/i.test(v)),
              iframes: document.querySelectorAll('iframe,object,embed').length,
              footer: !!document.querySelector('footer'),
              notice: (document.querySelector('aside.notice') || {}).textContent || '',
            })"""
        )
        check(dom["scripts"] == 0, "%s: %d script elements" % (where, dom["scripts"]))
        check(dom["handlers"] == [], "%s: event handler attributes %s" % (where, dom["handlers"]))
        check(dom["js_links"] == [], "%s: script URLs %s" % (where, dom["js_links"]))
        check(dom["iframes"] == 0, "%s: frames or objects" % where)
        check(dom["footer"], "%s: the page is cut short (no footer)" % where)
        check(len(dom["notice"]) > 20, "%s: the notice is missing" % where)
        self.events.clear()

    def agent_links_are_marked(self, where):
        external = self.page.evaluate(
            """() => [...document.querySelectorAll('a[href]')]
                 .filter(a => /^https?:/i.test(a.getAttribute('href')))
                 .map(a => [a.getAttribute('href'), a.getAttribute('rel') || ''])"""
        )
        for href, rel in external:
            check(
                set(rel.split()) >= {"nofollow", "ugc", "noopener"},
                "%s: link %s without rel=nofollow ugc noopener (%r)" % (where, href, rel),
            )
        return external

    def shot(self, name):
        folder = os.environ.get("AGENTDIR_PAGES_SCREENSHOTS")
        if folder:
            os.makedirs(folder, exist_ok=True)
            self.page.screenshot(path=os.path.join(folder, name + ".png"), full_page=True)


def main():
    base, plan = sys.argv[1].rstrip("/"), json.loads(sys.argv[2])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(locale="en-US", viewport={"width": 1100, "height": 900})
        context.add_init_script(WATCH)
        w = Watched(context, "tour")
        page = w.page

        # The front page, then a search typed into its box and submitted.
        r = w.goto(base + "/")
        check(r.status == 200, "/ answered %s" % r.status)
        check(page.locator("html").get_attribute("lang") == "en", "/ in English for an English browser")
        check(page.locator("#stats").is_visible(), "/ shows the counts")
        w.assert_clean("/")
        w.shot("home-en")
        page.fill("form.search input[name=q]", plan["query"])
        with page.expect_navigation():
            page.click("form.search button[type=submit]")
        check("/agents?" in page.url and "q=" in page.url, "the search form leads to /agents?q=: %s" % page.url)
        hits = page.locator("li.hit").evaluate_all("els => els.map(e => e.dataset.handle)")
        check(plan["benign"] in hits, "the search finds %s: %s" % (plan["benign"], hits))
        w.assert_clean("search")
        w.shot("search-en")

        # Follow the card, then switch the language there.
        with page.expect_navigation():
            page.click("li.hit[data-handle='%s'] h2 a" % plan["benign"])
        check(page.url.endswith("/agents/" + plan["benign"]), "the result leads to its card: %s" % page.url)
        check(page.locator("#card").is_visible(), "the card is shown")
        check(page.locator("meta[property='og:title']").count() == 1, "the card carries OpenGraph tags")
        w.assert_clean("card")
        w.agent_links_are_marked("card")
        w.shot("card-en")
        with page.expect_navigation():
            page.click("#switch-lang")
        check(page.locator("html").get_attribute("lang") == "zh", "the switch turns the page to Chinese")
        check("信任与证明" in page.locator("#trust h2").inner_text(), "the card's headings are in Chinese")
        w.assert_clean("card in Chinese")
        w.shot("card-zh")
        # The choice holds: the search box carries it to the next page.
        page.fill("header form.quick input[name=q]", plan["query"])
        with page.expect_navigation():
            page.press("header form.quick input[name=q]", "Enter")
        check(page.locator("html").get_attribute("lang") == "zh", "the chosen language holds across a search")
        w.assert_clean("search in Chinese")
        w.shot("search-zh")

        # A browser that prefers Chinese gets Chinese without the switch.
        zh = browser.new_context(locale="zh-CN", extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9"})
        zh.add_init_script(WATCH)
        wz = Watched(zh, "zh")
        wz.goto(base + "/")
        check(wz.page.locator("html").get_attribute("lang") == "zh", "Accept-Language: zh chooses Chinese")
        wz.assert_clean("/ in Chinese")
        wz.shot("home-zh")

        # Every page that shows hostile text: nothing runs, nothing breaks, the text shows as text.
        hostile = [
            ("hostile card", "/agents/" + plan["hostile"]),
            ("hostile card in Chinese", "/agents/%s?lang=zh" % plan["hostile"]),
            ("hostile call", "/calls/" + plan["call"]),
            ("hostile search", "/agents?q=" + plan["hostile_query"]),
            ("search listing the hostile agent", "/agents?capability=" + plan["hostile_capability"]),
        ]
        shown = ""
        for where, path in hostile:
            r = w.goto(base + path)
            check(r.status == 200, "%s answered %s" % (where, r.status))
            w.assert_clean(where)
            w.agent_links_are_marked(where)
            shown += page.locator("body").inner_text()
            # Hovering and clicking what an agent wrote runs nothing either.
            for sel in ["h1", ".tagline", "dd", ".text"]:
                for el in page.locator(sel).all()[:6]:
                    try:
                        el.hover(timeout=500)
                    except Exception:
                        pass
            w.assert_clean(where + " after hovering")
            if where == "hostile card":
                w.shot("card-hostile")
            if where == "hostile call":
                w.shot("call-en")
        for text in plan["hostile_texts"]:
            check(text in shown, "the hostile text %r is shown as text" % text)

        # The card links to its JSON and its signed statement.
        w.goto(base + "/agents/" + plan["benign"])
        for sel, path in [("#json-card", "/api/agents/"), ("#statement", "/api/agents/")]:
            href = page.locator(sel).get_attribute("href")
            check(href is not None and href.startswith(path), "%s links to %s: %s" % (sel, path, href))
        browser.close()

    if failures:
        print("%d failed" % len(failures))
        sys.exit(1)
    print("browser checks passed")


if __name__ == "__main__":
    main()
