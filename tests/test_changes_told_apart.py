"""What the thirtieth corrections set missed, each rewritten: a mark cut from a long turn, a
table's row changed in a diff, a branch and a ruleset taken for one thing, two ORMs, a list's
item added beside one kept, a question about domains and the project's own name in a prompt;
and from older sets, a variable given another value beside a mention of the old one."""

from __future__ import annotations

from hitdata import marked, pairs

from memd.recall import lexical, synonyms
from memd.recall.block import cut_turn
from memd.store import current, diffs
from memd.text.searchterms import term_set as searchterms_of

OWNERS = "claude: ```markdown ## Ownership | Role | Who | |---|---| | Service owner | Priya Raman (@praman) | | Backup | @acme/payments | | On-call rotation | PagerDuty: `paygate-primary` | Questions about refunds, PSP integrations or settlement files go to the owner first. ``` And the matching `CODEOWNERS` line: ``` /services/paygate/ @praman @acme/payments ```"  # fmt: skip
HANDED = "claude: ```diff | Role | Who | |---|---| -| Service owner | Priya Raman (@praman) | +| Service owner | Tomasz Wójcik (@twojcik) | | Backup | @acme/payments | ``` ```diff -/services/paygate/ @praman @acme/payments +/services/paygate/ @twojcik @acme/payments ```"  # fmt: skip


def test_a_table_row_changed_in_a_diff_retires_the_name_and_its_handle() -> None:
    """ "-| Service owner | Priya Raman (@praman) |" / "+| Service owner | Tomasz Wójcik
    (@twojcik) |": a row may change a name and its handle at once (three words)."""
    assert {"Priya", "Raman", "@praman"} <= diffs.diff_removed(HANDED)
    assert "retires 'priya'" in pairs("user: Priya Raman owns paygate, payments team is backup", HANDED)  # fmt: skip


def test_a_mark_stays_in_its_sentence_before_a_closing_fence() -> None:
    """A claim that ends with a block's closing fence is marked before the fence, so the mark
    stays in the sentence a long turn is cut to (after the fence it began one of its own, cut
    away with it)."""
    out = marked(("2024-06-03", OWNERS), ("2024-07-01", HANDED))
    assert "[until 2024-07-01" in out["a"]
    weights = {t: 1.0 for t in searchterms_of("who owns the refunds settlement files")}
    shown = cut_turn(out["a"], weights)
    assert "owner first [until 2024-07-01" in shown


def test_a_branch_and_a_ruleset_are_not_one_thing() -> None:
    """ "the `main` branch protection rule" / "ruleset `billing-two-reviews` now requires 2
    approvals": two kinds of thing, so neither name replaces the other. A branch renamed is
    still one."""
    old = 'claude: ``` /services/billing/ @mreyes ``` Then enable "Require review from Code Owners" on the `main` branch protection rule.'  # fmt: skip
    new = "claude: Done: ruleset `billing-two-reviews` now requires 2 approvals and code owner review for `services/billing/**`."  # fmt: skip
    assert not pairs(old, new)
    assert current.noun_kind(old, "main") == "branch"
    assert current.noun_kind(new, "billing-two-reviews") == "ruleset"
    renamed = "user: we renamed the default branch on github from master to trunk"
    assert pairs("user: the release job runs on pushes to the `master` branch", renamed)


def test_one_orm_swapped_for_another_in_chinese() -> None:
    """ "用 gorm 写一下…repo", later "决定 coupon-svc 全量换成 sqlc": two tools of one job."""
    old = "user: coupon-svc 用 gorm 写一下优惠券领取的 repo"
    new = "user: GORM 那些隐式行为踩坑太多了。决定 coupon-svc 全量换成 sqlc，先把 Claim 改了"
    assert pairs(old, new)


def test_an_item_added_after_one_left_as_it_was_takes_nothing_away() -> None:
    """ "enable: - errcheck + - revive", run onto one line: "- errcheck" is a context line of
    the list, not a removed one; a removed item ("- - errcheck") still goes."""
    added = "claude: ```diff linters: disable-all: true enable: - errcheck + - revive linters-settings: errcheck: check-type-assertions: true + revive: + rules: + - name: exported ```"  # fmt: skip
    assert not diffs.diff_removed(added)
    swapped = "claude: ```diff linters: enable: - - errcheck + - revive ```"
    assert "errcheck" in diffs.diff_removed(swapped)


def test_a_question_about_domains_is_answered_by_a_host_name() -> None:
    """ "what domains does the storefront answer on?" is answered by a text about the
    storefront that names ``store.brindle.co``; not by one that names only a file."""
    query = "what domains does the storefront answer on?"
    text = "user: nginx server block for the storefront on store.brindle.co, proxy to node on 3000"
    assert synonyms.asks_for(query)
    have = searchterms_of(text)
    assert synonyms.answers(have, query, text)
    files = "user: the storefront reads config.yaml and main.py at start"
    assert not synonyms.answers(searchterms_of(files), query, files)


def test_the_projects_own_name_is_no_term_to_cover() -> None:
    """Asked in ``/src/meridian``, "what's meridian's default branch called" has its other
    terms to cover; a prompt of the name alone keeps it, and a short folder name stays a word."""
    own = lexical.own_names(["/src/meridian", "user:me"])
    assert own == {"meridian"}
    assert "meridian" not in lexical.query_terms("what's meridian's default branch called", own)[0]
    assert lexical.query_terms("meridian", own)[0] == ("meridian",)
    assert not lexical.own_names(["/src/api"])


def test_a_variable_given_another_value_is_not_kept_by_another_subjects_mention() -> None:
    """``SLACK_ALERT_CHANNEL=#ops-alerts``, later ``SLACK_ALERT_CHANNEL=#payments-oncall`` with
    "Infra alerts (disk, CPU, 5xx rate) still go to #ops-alerts": a variable holds one value, so
    the older setting is marked; the other alerts' channel is another subject."""
    old = "claude: It posts through the incoming webhook and the channel comes from config: ```env SLACK_ALERT_CHANNEL=#ops-alerts ``` in `.env.production`."  # fmt: skip
    new = "claude: Both done. Alerts: `SLACK_ALERT_CHANNEL=#payments-oncall` in `.env.production`. Infra alerts (disk, CPU, 5xx rate) still go to #ops-alerts, only the payment failure ones moved."  # fmt: skip
    out = marked(("2024-07-01", old), ("2024-07-09", new))
    assert "[until 2024-07-09; now:" in out["a"]
    kept = "claude: Both done. Staging now runs `IMAGE_TAG=3.2.0`. Production stays on 3.1.4."
    assert "[until" not in marked(("2024-07-01", "claude: Production and staging run 3.1.4."), ("2024-07-09", kept))["a"]  # fmt: skip
