"""The web page in a real browser: headless Chromium driven by Selenium.

Needs Debian's ``chromium`` and ``chromium-driver`` (``apt-get install chromium
chromium-driver``) and the ``selenium`` package (the ``test`` extra); the tests
skip, saying which is missing, without them.  Screenshots of the main states
are saved to ``$TENSCALC_TEST_ARTIFACTS/web`` when that variable is set, else to
a pytest temporary folder (its path is printed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.printing.drawing import graphviz_available
from tenscalc.web.compute import analyse
from tenscalc.web.server import make_server, serve_in_thread

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BROWSER = next((path for path in map(shutil.which, BROWSERS) if path), None)
DRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,  # a headless browser
    pytest.mark.skipif(BROWSER is None, reason="no Chromium browser (apt-get install chromium)"),
    pytest.mark.skipif(DRIVER is None, reason="no chromedriver (apt-get install chromium-driver)"),
]
WAIT = 120  # seconds: the machine may be shared and slow


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    root = os.environ.get("TENSCALC_TEST_ARTIFACTS")
    folder = Path(root) / "web" if root else tmp_path_factory.mktemp("web-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nweb page screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def server():
    srv = make_server(port=0, workers=2, timeout=120)
    serve_in_thread(srv)
    yield srv
    srv.shutdown()
    srv.close()


@pytest.fixture(scope="module")
def browser(artifacts):
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = BROWSER
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1200,1300",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(artifacts)})
    yield driver
    driver.quit()


_loads = iter(range(1, 10**6))


def open_page(browser, server, expression, declarations="", wrt="", order=1):
    """Load the page with its fields filled in (a fresh load each time) and wait for every answer."""
    fragment = urlencode({"e": expression, "d": declarations, "wrt": wrt, "k": order})
    browser.get(f"{server.url}?load={next(_loads)}#{fragment}")
    return wait_ready(browser)


def wait_ready(browser):
    WebDriverWait(browser, WAIT).until(
        lambda d: d.find_element(By.ID, "status").text in ("ready", "the input is not valid yet")
    )
    return browser


def download(browser, artifacts, button_id, name):
    """Click the page's download button ``button_id`` and wait (bounded) for the file ``name``."""
    target = artifacts / name
    target.unlink(missing_ok=True)
    browser.find_element(By.ID, button_id).click()
    deadline = time.monotonic() + WAIT
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return target


def text_of(browser, element_id):
    return browser.execute_script(f"return document.getElementById('{element_id}').textContent")


def tex_of_formulas(browser):
    # KaTeX keeps the source of each formula in a MathML annotation
    return browser.execute_script(
        "return [...document.querySelectorAll('#formulas .main annotation')].map(a => a.textContent)"
    )


def shot(browser, artifacts, name):
    path = artifacts / f"{name}.png"
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000  # a page, not a blank image


def select_tab(browser, name):
    browser.find_element(By.ID, f"tab-{name}").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, f"panel-{name}").is_displayed())


def run_code(source):
    namespace: dict = {}
    exec(source, namespace)  # the code the page shows, as a user would paste it
    return namespace["f"]


def test_the_default_example_renders(browser, server, artifacts):
    browser.get(server.url)
    wait_ready(browser)
    formulas = tex_of_formulas(browser)
    assert len(formulas) == 3  # f, its gradient and its Hessian
    assert formulas[2].startswith("\\frac{\\partial^{2} f}{\\partial x^{2}} = ")
    assert browser.find_elements(By.CSS_SELECTOR, "#formulas .katex-html")  # rendered, not raw TeX
    # the einsum text under the formulas parses back to A + Aᵀ
    hessian_text = text_of(browser, "einsum-text").split("# Hessian wrt x\n")[1].strip()
    A = np.random.default_rng(0).standard_normal((3, 3))
    np.testing.assert_allclose(tc.evaluate(tc.parse(hessian_text, {"A": 2}), {"A": A}), A + A.T)
    shot(browser, artifacts, "1-derivative-and-python")


def test_typing_an_expression_shows_its_derivative_check_and_convexity(browser, server, artifacts):
    browser.get(f"{server.url}?load=typing")
    wait_ready(browser)
    expression = browser.find_element(By.ID, "expression")
    expression.clear()
    expression.send_keys("(A *(ij,j->i) x - y) *(i,i->) (A *(ij,j->i) x - y)")
    wrt = browser.find_element(By.ID, "wrt")
    wrt.clear()
    wrt.send_keys("x")
    Select(browser.find_element(By.ID, "order")).select_by_value("2")
    WebDriverWait(browser, WAIT).until(lambda d: "convex in x" in text_of(d, "convexity"))
    wait_ready(browser)
    formulas = tex_of_formulas(browser)
    assert "\\frac{\\partial^{2} f}{\\partial x^{2}}" in formulas[-1] and "A^\\top" in formulas[-1]
    select_tab(browser, "check")
    rows = browser.find_elements(By.CSS_SELECTOR, "#check-table tr")
    assert [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows[1:]] == ["agrees", "agrees"]
    assert "A: 2×3" in text_of(browser, "check")  # distinct axis lengths
    assert text_of(browser, "python-check").startswith("Python code: agrees")
    shot(browser, artifacts, "3-numeric-check")
    select_tab(browser, "convexity")
    assert browser.find_element(By.ID, "convexity-verdict").text == "convex in x"
    assert "certificate" in text_of(browser, "convexity-explanation")
    shot(browser, artifacts, "4-convexity")


def test_the_python_code_runs_and_downloads(browser, server, artifacts):
    open_page(browser, server, "tanh(W *(ij,j->i) x) *(i,i->) y", wrt="W", order=1)
    select_tab(browser, "python")
    source = text_of(browser, "python-code")
    assert "def f(" in source and "import tenscalc" not in source
    rng = np.random.default_rng(1)
    W, x, y = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal(2)
    value, gradient = run_code(source)(W=W, x=x, y=y)
    np.testing.assert_allclose(value, np.tanh(W @ x) @ y)
    np.testing.assert_allclose(gradient, np.outer(y * (1 - np.tanh(W @ x) ** 2), x))
    target = download(browser, artifacts, "download-python", "tenscalc_f.py")
    assert target.read_text() == source
    # the self-checking script: the same function, random data and a finite-difference check
    script = download(browser, artifacts, "download-script", "tenscalc_check.py")
    text = script.read_text()
    assert text.startswith(source.rstrip("\n")) and 'if __name__ == "__main__":' in text
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip().endswith("agrees"), done.stdout + done.stderr


def test_an_invalid_input_shows_the_message_with_a_caret(browser, server, artifacts):
    open_page(browser, server, "x *(i,ij->j) A *(j,j->) x", wrt="x", order=2)
    expression = browser.find_element(By.ID, "expression")
    expression.clear()
    expression.send_keys("x *(i,ij->j) A *(j,->) x")
    WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "error").is_displayed())
    message = text_of(browser, "error")
    expected = analyse({"expression": "x *(i,ij->j) A *(j,->) x", "wrt": "x", "order": 2})["error"]["message"]
    assert message == expected
    lines = message.splitlines()
    assert lines[-2] == "  x *(i,ij->j) A *(j,->) x" and lines[-1].strip() == "^"
    assert "Traceback" not in message
    assert "invalid" in expression.get_attribute("class")
    shot(browser, artifacts, "5-invalid-input")
    # fixing it brings the results back and clears the message
    expression.clear()
    expression.send_keys("x *(i,ij->j) A *(j,j->) x")
    WebDriverWait(browser, WAIT).until(lambda d: not d.find_element(By.ID, "error").is_displayed())
    assert "invalid" not in expression.get_attribute("class")


def test_dag_drawings(browser, server, artifacts):
    open_page(browser, server, "log(det(X))", wrt="X", order=1)
    select_tab(browser, "dag")
    if graphviz_available():
        WebDriverWait(browser, 30).until(
            lambda d: (
                len(
                    d.execute_script(
                        "return [...document.querySelectorAll('#panel-dag img')].filter(i => i.naturalWidth > 0)"
                    )
                )
                == 2
            )
        )
    else:
        assert "Graphviz is not installed" in text_of(browser, "dag-expression")
    shot(browser, artifacts, "2-dag-drawings")


def test_an_order_3_tensor_and_a_third_derivative(browser, server, artifacts):
    browser.get(f"{server.url}?load=cubic")
    wait_ready(browser)
    select = Select(browser.find_element(By.ID, "examples"))
    select.select_by_visible_text("cubic form (order-3 tensor)")
    WebDriverWait(browser, WAIT).until(lambda d: len(tex_of_formulas(d)) == 4)
    wait_ready(browser)
    assert tex_of_formulas(browser)[3].startswith("\\frac{\\partial^{3} f}{\\partial x^{3}}")
    select_tab(browser, "check")
    rows = browser.find_elements(By.CSS_SELECTOR, "#check-table tr")
    assert [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows[1:]] == ["agrees"] * 3
    shot(browser, artifacts, "6-third-derivative")


def test_the_page_loads_only_from_this_server_and_its_weight(browser, server, artifacts):
    open_page(browser, server, "x *(i,ij->j) A *(j,j->) x", wrt="x", order=2)
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(r => [r.name, r.encodedBodySize])"
    )
    page = browser.execute_script(
        "const n = performance.getEntriesByType('navigation')[0]; return [n.name, n.encodedBodySize]"
    )
    assert all(name.startswith(server.url) for name, _ in resources)
    files = [page] + [(name, size) for name, size in resources if "/api/" not in name]
    weight = sum(size for _, size in files)
    report = "\n".join(f"{size:>8}  {name.removeprefix(server.url)}" for name, size in files)
    (artifacts / "page-weight.txt").write_text(f"{report}\n{weight:>8}  total (bytes, uncompressed)\n")
    print(f"\npage weight: {weight} bytes\n{report}")
    assert weight < 600_000


@pytest.fixture
def phone(browser):
    """The browser as a 390x844 phone (the viewport of an iPhone 12-15) for one test."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    )
    yield browser
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def page_fits(browser):
    width, viewport = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert viewport <= 390 and width <= viewport, (width, viewport)


def test_the_page_fits_a_390_px_phone_in_every_state(phone, server, artifacts):
    # the logistic loss: its derivatives have a `where t₀ = …` clause, the longest formulas of the examples
    open_page(phone, server, "log(1 + exp(-(y *(i,i->i) (X *(ij,j->i) w)))) *(i,->) 1", wrt="w", order=2)
    WebDriverWait(phone, WAIT).until(lambda d: "convex in w" in text_of(d, "convexity"))
    assert phone.find_elements(By.CSS_SELECTOR, "#formulas .where .katex")  # the clause is on its own line
    page_fits(phone)
    shot(phone, artifacts, "7-phone-result")
    for tab in ("python", "dag", "check", "convexity"):
        select_tab(phone, tab)
        assert phone.find_element(By.ID, f"tab-{tab}").is_displayed()
        page_fits(phone)
        shot(phone, artifacts, f"7-phone-{tab}")
    # the reference and legend opened, and the type control (shown for this input)
    assert phone.find_element(By.ID, "types").is_displayed()
    phone.find_element(By.CSS_SELECTOR, "#help summary").click()
    assert phone.find_element(By.ID, "legend").is_displayed()
    page_fits(phone)
    shot(phone, artifacts, "7-phone-help")
    # an invalid input, then the empty page
    expression = phone.find_element(By.ID, "expression")
    expression.clear()
    expression.send_keys("x *(i,ij->j) A *(j,->) x")
    WebDriverWait(phone, WAIT).until(lambda d: d.find_element(By.ID, "error").is_displayed())
    page_fits(phone)
    expression.clear()
    expression.send_keys(" ")
    WebDriverWait(phone, WAIT).until(lambda d: d.find_element(By.ID, "status").text == "type an expression")
    page_fits(phone)
    shot(phone, artifacts, "7-phone-empty")


def test_matrix_notation_is_offered_and_explained(browser, server, artifacts):
    browser.get(f"{server.url}?load=help")
    wait_ready(browser)
    assert "x'*A*x" in browser.find_element(By.ID, "expression").get_attribute("placeholder")
    labels = [o.text for o in Select(browser.find_element(By.ID, "examples")).options[1:]]
    expressions = browser.execute_script("return EXAMPLES.map(e => e[1])")
    matrix = [e for e in expressions if "*(" not in e]
    assert len(labels) == len(expressions) and 2 * len(matrix) >= len(expressions)
    assert {"x'*A*x", "norm2(A*x-b)^2", "log(det(X))", "tr(inv(X)*A)"} <= set(matrix)
    # every matrix-notation example gives a derivative that agrees numerically
    for label, expression in zip(labels, expressions):
        if expression not in matrix:
            continue
        # the menu's change handler starts the request at once: "computing…", then "ready"
        Select(browser.find_element(By.ID, "examples")).select_by_visible_text(label)
        assert browser.find_element(By.ID, "expression").get_attribute("value") == expression
        wait_ready(browser)
        assert text_of(browser, "check-badge") == "✓", label
        assert not browser.find_element(By.ID, "error").is_displayed(), label
    # the reference and the legend of the output's symbols
    browser.find_element(By.CSS_SELECTOR, "#help summary").click()
    help_text = browser.find_element(By.ID, "help").text
    for needle in ("Matrix notation", "Einsum language", "norm2", "tr det inv logdet", "a *(s1,s2->s3) b"):
        assert needle in help_text, needle
    legend = browser.find_element(By.ID, "legend").text
    for needle in ("⊙", "⊘", "∘2", "diag(", "1ᵀ", "the expression's axes first, then the variable's"):
        assert needle in legend, needle
    shot(browser, artifacts, "8-reference")


def test_the_type_control_declares_what_the_letter_rule_guessed_wrong(browser, server, artifacts):
    open_page(browser, server, "norm2(A*x-b)^2", wrt="x", order=2)
    assert "letter rule" in text_of(browser, "error") and "b 1" in text_of(browser, "error")
    b_type = Select(browser.find_element(By.ID, "type-b"))
    assert b_type.first_selected_option.text == "scalar"  # the letter rule's guess, preselected
    assert Select(browser.find_element(By.ID, "type-A")).first_selected_option.text == "matrix"
    shot(browser, artifacts, "9-types-before")
    b_type.select_by_visible_text("vector")
    WebDriverWait(browser, WAIT).until(lambda d: not d.find_element(By.ID, "error").is_displayed())
    wait_ready(browser)
    assert browser.find_element(By.ID, "declarations").get_attribute("value").split() == ["A", "2", "x", "1", "b", "1"]
    select_tab(browser, "check")
    rows = browser.find_elements(By.CSS_SELECTOR, "#check-table tr")
    assert [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows[1:]] == ["agrees", "agrees"]
    shot(browser, artifacts, "9-types-after")


def test_declaring_a_symmetric_matrix_through_the_control(browser, server, artifacts):
    open_page(browser, server, "x'*A*x", wrt="x", order=2)
    assert "A + A^\\top" in tex_of_formulas(browser)[2]
    assert browser.find_element(By.ID, "symmetric-x").get_attribute("disabled")  # a vector is not symmetric
    browser.find_element(By.ID, "symmetric-A").click()
    WebDriverWait(browser, WAIT).until(lambda d: "A + A^\\top" not in (tex_of_formulas(d) or [""])[-1])
    wait_ready(browser)
    declarations = browser.find_element(By.ID, "declarations").get_attribute("value")
    assert declarations.split() == ["x", "1", "A", "2", "symmetric"]
    hessian = tex_of_formulas(browser)[2]
    assert hessian.endswith("= 2 A"), hessian
    select_tab(browser, "check")
    assert text_of(browser, "check-badge") == "✓"


def test_unticking_the_letter_rule_with_no_declarations_turns_it_off(browser, server, artifacts):
    open_page(browser, server, "x'*A*x", wrt="x", order=1)
    browser.find_element(By.ID, "defaults").click()
    WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "error").is_displayed())
    assert "is not declared" in text_of(browser, "error")
    assert Select(browser.find_element(By.ID, "type-x")).first_selected_option.text == "undeclared"
    browser.find_element(By.ID, "defaults").click()
    WebDriverWait(browser, WAIT).until(lambda d: not d.find_element(By.ID, "error").is_displayed())


def test_an_abandoned_heavy_input_does_not_delay_the_next(browser, server, artifacts):
    # six nested sines: orders 6 and 5 take tens of seconds, order 1 a fraction of one
    heavy = "sin(sin(sin(sin(sin(sin(W *(ij,j->i) x))))))*(i,i->) y"
    open_page(browser, server, heavy, wrt="x", order=1)
    cancelled = server.pool.cancelled
    order = Select(browser.find_element(By.ID, "order"))
    order.select_by_value("6")
    WebDriverWait(browser, WAIT).until(lambda d: server.pool.ready() < 2)  # a worker took the order-6 input
    order.select_by_value("5")
    WebDriverWait(browser, WAIT).until(lambda d: server.pool.cancelled > cancelled)
    order.select_by_value("1")
    start = time.monotonic()
    WebDriverWait(browser, WAIT).until(lambda d: len(tex_of_formulas(d)) == 2 and text_of(d, "status") != "computing…")
    # behaviour, not seconds: orders 6 and 5 were stopped, not left running beside order 1
    assert server.pool.cancelled >= cancelled + 2
    print(f"\norder 1 shown {time.monotonic() - start:.2f} s after it was picked (was 10.9-14.3 s)")
