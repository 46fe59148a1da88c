//! Turning a capture's text into templates: the session's own values
//! ([`Facts`], from its environment or read back from the text) become
//! `{{…}}` variables, and the gitStatus, user-context and skills reminders
//! become the profile's templates.

use super::capture::replace_in_tools;
use crate::env::{GitFacts, SessionEnv};
use crate::profile::{GitStatusTemplate, MemoryStyle, ModelInfo, SkillsTemplate, UserContextTemplate};
use serde_json::Value;

/// Session facts used to turn text into templates; any may be unknown.
#[derive(Default)]
pub(super) struct Facts {
    pub(super) cwd: Option<String>,
    pub(super) home: Option<String>,
    pub(super) slug: Option<String>,
    pub(super) is_git: Option<bool>,
    pub(super) platform: Option<String>,
    pub(super) shell: Option<String>,
    pub(super) os_version: Option<String>,
    pub(super) date: Option<String>,
    pub(super) git: Option<GitFacts>,
}

impl Facts {
    pub(super) fn from_env(env: &SessionEnv) -> Facts {
        Facts {
            cwd: Some(env.cwd.clone()),
            home: Some(env.home.clone()),
            slug: Some(env.project_slug()),
            is_git: Some(env.is_git),
            platform: Some(env.platform.clone()),
            shell: Some(env.shell.clone().unwrap_or_else(|| "unknown".into())),
            os_version: Some(env.os_version.clone()),
            date: env.date.clone(),
            git: env.git.clone(),
        }
    }

    /// A [`SessionEnv`] when enough is known to render the templates back.
    pub(super) fn to_env(&self) -> Option<SessionEnv> {
        let cwd = self.cwd.clone()?;
        let env = SessionEnv {
            home: self.home.clone()?,
            platform: self.platform.clone().unwrap_or_default(),
            os_version: self.os_version.clone().unwrap_or_default(),
            shell: self.shell.clone().filter(|s| s != "unknown"),
            is_git: self.is_git.unwrap_or(false),
            git: self.git.clone(),
            date: self.date.clone(),
            cwd,
            ..SessionEnv::default()
        };
        (self.slug.as_deref().is_none_or(|s| s == env.project_slug())).then_some(env)
    }
}

/// The facts of a capture: its environment's when given, else read back
/// from its texts; the date, which a snapshot does not record, from the
/// `<env>` block's `Today's date: YYYY-MM-DD` line (1.0.x, 2.0.x).
pub(super) fn capture_facts(env: Option<&SessionEnv>, texts: &[String]) -> Facts {
    let mut f = env.map_or_else(|| infer_facts(texts), Facts::from_env);
    if f.date.is_none() {
        f.date = texts.iter().flat_map(|t| env_block(t)).find_map(|l| {
            let v = l.rsplit_once(": ")?.1;
            let b = v.as_bytes();
            let date = b.len() == 10
                && b.iter().enumerate().all(|(j, c)| if j == 4 || j == 7 { *c == b'-' } else { c.is_ascii_digit() });
            date.then(|| v.to_string())
        });
    }
    f
}

/// The lines between `<env>` and `</env>` of a text.
fn env_block(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').skip_while(|l| *l != "<env>").skip(1).take_while(|l| *l != "</env>")
}

/// Split a text into sections at `\n\n# ` (joining them with `\n\n` gives
/// the text back).
pub(super) fn split_sections(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.get(1..).and_then(|r| r.find("\n\n# ")).map(|i| i + 1) {
        out.push(rest[..i].to_string());
        rest = &rest[i + 2..];
    }
    out.push(rest.to_string());
    out
}

/// `Name: 'claude-…'` pairs, `model named N. The exact model ID is I.` and
/// `knowledge cutoff is C.` found in the texts.
pub(super) fn scan_models(texts: &[String], model: &str, into: &mut Vec<ModelInfo>) {
    fn add(into: &mut Vec<ModelInfo>, id: &str, name: &str) {
        if !into.iter().any(|m| m.id == id) && !id.is_empty() && !name.is_empty() {
            into.push(ModelInfo { id: id.into(), name: name.into(), knowledge_cutoff: None });
        }
    }
    for t in texts {
        for line in t.lines() {
            // `…, Sonnet 4.6: 'claude-sonnet-4-6', …`
            for part in line.split(", ") {
                if let Some((name, id)) = part.rsplit_once(": '") {
                    let id = id.split('\'').next().unwrap_or("");
                    let name = name.rsplit("— ").next().unwrap_or(name).rsplit(" - ").next().unwrap_or(name);
                    let name = name.rsplit_once(". ").map_or(name, |(_, n)| n).trim();
                    if id.starts_with("claude-") && name.split(' ').count() <= 3 {
                        add(into, id, name);
                    }
                }
            }
            if let Some((_, rest)) = line.split_once("model named ")
                && let Some((name, id)) = rest.split_once(". The exact model ID is ")
            {
                add(into, id.trim_end_matches('.'), name);
            }
            if let Some((_, c)) = line.split_once("knowledge cutoff is ")
                && let Some(m) = into.iter_mut().find(|m| m.id == model)
            {
                m.knowledge_cutoff = Some(c.trim_end_matches('.').to_string());
            }
        }
    }
}

/// Read the session facts back from the texts (no env given).
pub(super) fn infer_facts(texts: &[String]) -> Facts {
    let mut f = Facts::default();
    let value = |label: &str| {
        texts.iter().flat_map(|t| t.lines()).find_map(|l| l.split_once(label).map(|(_, v)| v.trim().to_string()))
    };
    f.cwd = value("Primary working directory: ");
    f.is_git = value("Is a git repository: ").map(|v| v == "true");
    f.platform = value(" - Platform: ");
    f.shell = value(" - Shell: ");
    f.os_version = value(" - OS Version: ");
    for t in texts {
        if let Some(i) = t.find("/.claude/projects/") {
            let start = t[..i].rfind(|c: char| c == '`' || c.is_whitespace()).map_or(0, |s| s + 1);
            f.home = Some(t[start..i].to_string());
            let after = &t[i + "/.claude/projects/".len()..];
            f.slug = after.split('/').next().map(str::to_string);
            break;
        }
    }
    f.date = texts.iter().find_map(|t| {
        let i = t.find("Today's date is ")?;
        Some(t[i + 16..].get(..10)?.to_string())
    });
    if let Some(g) = texts.iter().find_map(|t| t.rsplit_once("gitStatus: ").map(|(_, g)| g.to_string())) {
        let mut facts = GitFacts::default();
        for p in g.split("\n\n") {
            if let Some(v) = p.strip_prefix("Current branch: ") {
                facts.branch = v.into();
            } else if p.starts_with("Main branch") {
                facts.main_branch = p.rsplit_once(": ").map_or("", |(_, v)| v).into();
            } else if let Some(v) = p.strip_prefix("Status:\n") {
                facts.status_short = if v == "(clean)" { String::new() } else { v.into() };
            } else if let Some(v) = p.strip_prefix("Recent commits:\n") {
                facts.log_oneline = v.into();
            } else if let Some(v) = p.strip_prefix("Git user: ") {
                facts.user_name = Some(v.into());
            }
        }
        f.git = Some(facts);
    }
    f
}

/// Turn the session's values in `text` into template variables.
pub(super) fn templatize(text: &str, f: &Facts, model: &str, models: &[ModelInfo]) -> String {
    let mut t = text.to_string();
    if let (Some(home), Some(slug)) = (&f.home, &f.slug)
        && !home.is_empty()
        && !slug.is_empty()
    {
        t = t.replace(&format!("{home}/.claude/projects/{slug}"), "{{home}}/.claude/projects/{{project_slug}}");
    }
    let mut paths: Vec<(&str, &str)> = [(f.cwd.as_deref(), "{{cwd}}"), (f.home.as_deref(), "{{home}}")]
        .into_iter()
        .filter_map(|(v, n)| v.filter(|v| v.len() > 1).map(|v| (v, n)))
        .collect();
    paths.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    for (v, n) in paths {
        t = t.replace(v, n);
    }
    let is_git = f.is_git.map(|g| if g { "true" } else { "false" });
    let env_values: [(Option<&str>, &str); 4] = [
        (is_git, "{{is_git}}"),
        (f.platform.as_deref(), "{{platform}}"),
        (f.shell.as_deref(), "{{shell}}"),
        (f.os_version.as_deref(), "{{os_version}}"),
    ];
    let model_name = models.iter().find(|m| m.id == model).map(|m| m.name.as_str());
    let cutoff = models.iter().find(|m| m.id == model).and_then(|m| m.knowledge_cutoff.as_deref());
    let mut model_line_done = false;
    let mut in_env = false;
    let yes_no = f.is_git.map(|g| if g { "Yes" } else { "No" });
    let block_values: [(Option<&str>, &str); 4] = [
        (f.date.as_deref(), "{{date}}"),
        (f.platform.as_deref(), "{{platform}}"),
        (f.os_version.as_deref(), "{{os_version}}"),
        (yes_no, "{{is_git_yes_no}}"),
    ];
    let lines: Vec<String> = t
        .split('\n')
        .map(|line| {
            let mut line = line.to_string();
            // 1.0.x/2.0.x: `Label: value` lines in an `<env>` block.
            if line == "</env>" {
                in_env = false;
            } else if in_env {
                for (v, name) in block_values {
                    if let Some(v) = v.filter(|v| !v.is_empty())
                        && let Some(head) = line.strip_suffix(&format!(": {v}"))
                    {
                        line = format!("{head}: {name}");
                        break;
                    }
                }
            }
            in_env |= line == "<env>";
            if line.trim_start().starts_with("- ") {
                for (v, name) in env_values {
                    if let Some(v) = v.filter(|v| !v.is_empty())
                        && let Some(head) = line.strip_suffix(&format!(": {v}"))
                    {
                        line = format!("{head}: {name}");
                        break;
                    }
                }
            }
            if !model_line_done && !model.is_empty() && line.contains(model) && !line.contains(&format!("'{model}'")) {
                model_line_done = true;
                line = line.replace(model, "{{model_id}}");
                if let Some(n) = model_name {
                    line = line.replacen(n, "{{model_name}}", 1);
                }
            }
            if let Some(c) = cutoff
                && line.contains("knowledge cutoff is ")
            {
                line = line.replace(&format!("knowledge cutoff is {c}"), "knowledge cutoff is {{knowledge_cutoff}}");
            }
            line
        })
        .collect();
    lines.join("\n")
}

/// The line naming the session's allowed tools (`--allowedTools` in the
/// snapshot's argv), as the `{{allowed_tools}}` variable and its template:
/// the first line that ends with `: ` + the tools joined by `, `, with the
/// newline on each side (1.0.128: absent, the prompt has two fewer
/// newlines). The text as it is when the session allowed none or no such
/// line is found.
pub(super) fn split_allowed_tools(text: String, env: Option<&SessionEnv>) -> (String, Option<String>) {
    let tools = env.map(SessionEnv::allowed_tools).unwrap_or_default();
    if tools.is_empty() {
        return (text, None);
    }
    let list = format!(": {}", tools.join(", "));
    let Some(line) = text.split('\n').find(|l| l.ends_with(&list)) else { return (text, None) };
    let whole = format!("\n{line}\n");
    if !text.contains(&whole) {
        return (text, None);
    }
    let tpl = format!("\n{}: {{{{tools}}}}\n", &line[..line.len() - list.len()]);
    (text.replacen(&whole, "{{allowed_tools}}", 1), Some(tpl))
}

/// The gitStatus value as a template.
/// `main_branch`: the session's, as the snapshot knows it; a captured main
/// branch that is not it (2.0.77 shows none without a remote) stays
/// literal, a release's own rule.
pub(super) fn git_template(value: &str, main_branch: Option<&str>) -> GitStatusTemplate {
    let paras: Vec<String> = value
        .split("\n\n")
        .map(|p| {
            if p.starts_with("Current branch: ") {
                "Current branch: {{branch}}".to_string()
            } else if let Some((head, _)) = p.split_once("\nCurrent branch: ").filter(|(_, b)| !b.contains('\n')) {
                // 1.0.x/2.0.x: the line ends the heading's paragraph.
                format!("{head}\nCurrent branch: {{{{branch}}}}")
            } else if p.starts_with("Main branch")
                && let Some((head, shown)) = p.rsplit_once(": ")
                && main_branch.is_none_or(|m| m == shown)
            {
                format!("{head}: {{{{main_branch}}}}")
            } else if p.starts_with("Git user: ") {
                "Git user: {{git_user}}".to_string()
            } else if p.starts_with("Status:\n") {
                "Status:\n{{status}}".to_string()
            } else if p.starts_with("Recent commits:\n") {
                "Recent commits:\n{{recent_commits}}".to_string()
            } else {
                p.to_string()
            }
        })
        .collect();
    GitStatusTemplate {
        text: paras.join("\n\n"),
        clean: "(clean)".into(),
        max_status_chars: 2000,
        truncated_note: "\n... (truncated because it exceeds 2k characters. If you need more information, run \"git status\" using BashTool)".into(),
    }
}

/// A prompt text without its last `gitStatus: ` section, and that section's
/// template.
pub(super) fn split_git_status(dynamic: String, main_branch: Option<&str>) -> (String, Option<GitStatusTemplate>) {
    match dynamic.rfind("\n\ngitStatus: ") {
        Some(g) => {
            let value = &dynamic[g + "\n\ngitStatus: ".len()..];
            let value = value.split("\ncacheBreaker: ").next().unwrap_or(value);
            let git = git_template(value, main_branch);
            (dynamic[..g].to_string(), Some(git))
        }
        None => (dynamic, None),
    }
}

/// The claudeMd section as a template, as the releases that show one send
/// it (and what a capture without memory files assumes).
pub(super) const CLAUDE_MD_SECTION: &str = "# claudeMd\n{{claude_md}}";

/// The user-context reminder among the first message's texts, and the date
/// it shows: with a `# currentDate` section (2.1.88), or of a `# claudeMd`
/// section alone (2.0.x), which is cut where the session's rendered memory
/// files end (so it needs the capture's environment).
pub(super) fn user_context_template(
    texts: &[String],
    f: &Facts,
    env: Option<&SessionEnv>,
) -> Option<(UserContextTemplate, String)> {
    let (mut tpl, date) = dated_user_context(texts, f)
        .or_else(|| claude_md_user_context(texts, f, env))
        .or_else(|| fixed_user_context(texts, f))?;
    // What the tail holds before its last paragraph are fixed sections
    // (1.0.128: `# important-instruction-reminders`, after claudeMd).
    let (fixed, tail) = split_fixed(&tpl.tail);
    if !fixed.is_empty() {
        tpl.fixed_sections.extend(fixed);
        tpl.tail = tail;
    }
    Some((tpl, date))
}

/// The tail's sections and its last paragraph: the tail starts at the last
/// `\n\n` before `</system-reminder>` (2.1.88, 2.0.77, 1.0.128 alike), and
/// what comes before it, after the `\n` that joins sections, is sections.
fn split_fixed(tail: &str) -> (Vec<String>, String) {
    let end = tail.rfind("\n</system-reminder>").unwrap_or(tail.len());
    match tail[..end].rfind("\n\n") {
        Some(at) if at > 0 && tail.starts_with("\n# ") => (vec![tail[1..at].to_string()], tail[at..].to_string()),
        _ => (Vec::new(), tail.to_string()),
    }
}

/// A reminder of fixed sections alone (1.0.128 `hello`: no CLAUDE.md, no
/// currentDate): a two-line head ending in `:`, then `# ` sections.
fn fixed_user_context(texts: &[String], f: &Facts) -> Option<(UserContextTemplate, String)> {
    let t = texts.iter().find(|t| {
        t.starts_with("<system-reminder>\n")
            && t.find("\n# ").is_some_and(|at| t[..at].matches('\n').count() == 1 && t[..at].ends_with(':'))
    })?;
    let first = t.find("\n# ")? + 1;
    let tpl = UserContextTemplate {
        head: t[..first].to_string(),
        claude_md: CLAUDE_MD_SECTION.into(),
        current_date: String::new(),
        fixed_sections: Vec::new(),
        tail: format!("\n{}", &t[first..]),
    };
    let (fixed, tail) = split_fixed(&tpl.tail);
    (!fixed.is_empty())
        .then(|| (UserContextTemplate { fixed_sections: fixed, tail, ..tpl }, f.date.clone().unwrap_or_default()))
}

/// The 2.0.x form: a `# claudeMd` section alone, cut where the session's
/// rendered memory files end.
fn claude_md_user_context(
    texts: &[String],
    f: &Facts,
    env: Option<&SessionEnv>,
) -> Option<(UserContextTemplate, String)> {
    let (t, claude_md, _) = captured_claude_md(texts, env?)?;
    let section = format!("# claudeMd\n{claude_md}");
    let at = t.find(&section)?;
    let tpl = UserContextTemplate {
        head: t[..at].to_string(),
        claude_md: CLAUDE_MD_SECTION.into(),
        current_date: String::new(),
        fixed_sections: Vec::new(),
        tail: t[at + section.len()..].to_string(),
    };
    Some((tpl, f.date.clone().unwrap_or_default()))
}

/// The session's claudeMd text, rendered from its snapshot's memory files
/// in `form` (comments kept, untrimmed: see
/// [`crate::profile::Layout::memory_comments`] and `memory_untrimmed`).
fn claude_md_of(env: &SessionEnv, (comments, untrimmed): (bool, bool)) -> Option<String> {
    render_claude_md(env, &MemoryStyle { trim: !untrimmed, strip_comments: !comments, rules: true })
}

/// The session's claudeMd text, its snapshot's memory files rendered in
/// `style`.
fn render_claude_md(env: &SessionEnv, style: &MemoryStyle) -> Option<String> {
    let mut roots = env.memory_roots();
    roots.keep_comments = !style.strip_comments;
    roots.no_rules = !style.rules;
    crate::env::memory::load(&roots).render_claude_md_as(style.trim)
}

/// How the capture's claudeMd section renders the memory files: (comments
/// kept, untrimmed). Each is on only when every form that shows in the
/// text has it (the text is followed by `\n# currentDate` in a dated
/// reminder; a file without comments, or a single file's trimmed text — a
/// prefix of its untrimmed one — in an undated reminder, cannot tell).
pub(super) fn memory_form(texts: &[String], env: Option<&SessionEnv>) -> (bool, bool) {
    let Some(env) = env else { return (false, false) };
    let Some(t) = texts.iter().find(|t| t.starts_with("<system-reminder>") && t.contains("\n# claudeMd\n")) else {
        return (false, false);
    };
    let next = if t.contains("\n# currentDate\n") { "\n# currentDate\n" } else { "" };
    let forms = [(false, false), (false, true), (true, false), (true, true)];
    let shown: Vec<(bool, bool)> = forms
        .into_iter()
        .filter(|f| claude_md_of(env, *f).is_some_and(|c| t.contains(&format!("# claudeMd\n{c}{next}"))))
        .collect();
    if shown.is_empty() {
        return (false, false);
    }
    (shown.iter().all(|f| f.0), shown.iter().all(|f| f.1))
}

/// The reminder with a `# claudeMd` section, the session's memory files
/// rendered as it shows them, and how ([`MemoryStyle`]): trimmed and
/// comments stripped (2.1.x) unless the capture holds them otherwise (the
/// files as written: 1.0.128, 2.0.77).
pub(super) fn captured_claude_md<'t>(texts: &'t [String], env: &SessionEnv) -> Option<(&'t str, String, MemoryStyle)> {
    let t = texts.iter().find(|t| t.starts_with("<system-reminder>") && t.contains("\n# claudeMd\n"))?;
    let render = |style: &MemoryStyle| render_claude_md(env, style);
    // The section a style renders must be followed by the next section
    // (`\n# `) or the reminder's last paragraph (`\n\n` and its indent):
    // a trimmed text is also a prefix of the same text as written.
    let fits = |x: &str| {
        let section = format!("# claudeMd\n{x}");
        t.match_indices(&section).any(|(at, _)| {
            let rest = &t[at + section.len()..];
            rest.starts_with("\n# ") || rest.starts_with("\n\n ")
        })
    };
    let default = MemoryStyle::default();
    let usual = render(&default)?;
    if fits(&usual) {
        return Some((t, usual, default));
    }
    for style in MemoryStyle::variants() {
        if let Some(text) = render(&style).filter(|x| fits(x)) {
            return Some((t, text, style));
        }
    }
    Some((t, usual, default))
}

/// The 2.1.88 form: the reminder with a `# currentDate` section.
pub(super) fn dated_user_context(texts: &[String], f: &Facts) -> Option<(UserContextTemplate, String)> {
    let t = texts.iter().find(|t| t.starts_with("<system-reminder>") && t.contains("\n# currentDate\n"))?;
    let first = t.find("\n# ")?;
    let head = &t[..=first];
    let date_at = t.find("\n# currentDate\n")? + 1;
    let line_end = t[date_at + "# currentDate\n".len()..].find('\n').map(|e| e + date_at + "# currentDate\n".len())?;
    let section = &t[date_at..line_end];
    let date = f.date.clone().or_else(|| {
        section.char_indices().find_map(|(i, _)| {
            let s = section.get(i..i + 10)?;
            let b = s.as_bytes();
            let ok = b.iter().enumerate().all(|(j, c)| if j == 4 || j == 7 { *c == b'-' } else { c.is_ascii_digit() });
            ok.then(|| s.to_string())
        })
    })?;
    let tpl = UserContextTemplate {
        head: head.to_string(),
        claude_md: CLAUDE_MD_SECTION.into(),
        current_date: section.replace(&date, "{{date}}"),
        fixed_sections: Vec::new(),
        tail: t[line_end..].to_string(),
    };
    Some((tpl, date))
}

/// The skills-listing reminder among the first message's texts, without the
/// skills found on disk for this session.
pub(super) fn skills_template(texts: &[String], env: Option<&SessionEnv>) -> Option<SkillsTemplate> {
    let t = texts.iter().find(|t| {
        t.starts_with("<system-reminder>")
            && t.lines().nth(1).is_some_and(|l| l.contains("skills"))
            && t.contains("\n- ")
    })?;
    let first = t.find("\n- ")? + 1;
    let end = t.rfind("\n</system-reminder>")?;
    let mut body = t.get(first..end)?.to_string();
    let mut tpl = SkillsTemplate {
        head: t[..first].to_string(),
        builtin: String::new(),
        line: "- {{name}}: {{description}}".into(),
        description_max: 250,
        ellipsis: "…".into(),
        tail: t[end..].to_string(),
    };
    // The longest cut description tells the limit.
    if let Some(n) = body
        .split("\n- ")
        .filter_map(|l| l.split_once(": ").map(|(_, d)| d))
        .filter(|d| d.ends_with('…'))
        .map(|d| d.chars().count())
        .max()
    {
        tpl.description_max = n;
    }
    if let Some(env) = env {
        let mut on_disk = Vec::new();
        if let Some(h) = &env.home_claude_dir {
            on_disk.extend(crate::env::skills::skills_in(h));
        }
        if let Some(p) = &env.project_dir {
            on_disk.extend(crate::env::skills::skills_in(&p.join(".claude")));
        }
        for s in on_disk.iter().rev() {
            let line = crate::assemble::pipeline::contexts::skill_line(&tpl, s);
            if body == line {
                body.clear();
            } else if let Some(b) = body.strip_suffix(&format!("\n{line}")) {
                body = b.to_string();
            }
        }
    }
    tpl.builtin = body;
    Some(tpl)
}

/// The tools with the session's skill lines (the capture's env has skills on
/// disk) as `{{skills}}` (see [`crate::profile::TOOL_VARS`]).
pub(super) fn skills_templates(tools: &[Value], env: Option<&SessionEnv>) -> Vec<Value> {
    let lines = env.map(crate::assemble::pipeline::contexts::skills_tool_lines).unwrap_or_default();
    let escaped = serde_json::to_string(&lines).unwrap_or_default();
    let inner = escaped.get(1..escaped.len().saturating_sub(1)).unwrap_or("");
    if inner.is_empty() {
        return tools.to_vec();
    }
    replace_in_tools(tools, inner, "{{skills}}")
}

/// The tools with "The current month is <Month YYYY>" of the capture's
/// `date` as `{{month_year}}` (see [`super::TOOL_VARS`]).
/// The capture's date itself (`2026-12-01`, 2.0.77's WebSearch: "Today's
/// date is …") as `{{date}}`.
pub(super) fn month_templates(tools: &[Value], date: Option<&str>) -> Vec<Value> {
    let Some(my) = date.and_then(crate::time::month_year) else { return tools.to_vec() };
    let tools = replace_in_tools(tools, &format!("The current month is {my}"), "The current month is {{month_year}}");
    match date.and_then(|d| d.get(..10)) {
        Some(day) => replace_in_tools(&tools, day, "{{date}}"),
        None => tools,
    }
}
