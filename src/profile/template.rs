//! The profile's template language: `{{name}}` variables inside verbatim
//! text.
//!
//! Only the names a renderer passes in are variables: any other `{{…}}` is
//! text (the 2.1.88 memory section itself contains `{{memory name}}` and
//! `{{user, feedback, project, reference}}`, which must be sent as they are).
//! A line that uses a variable whose value is `None` is dropped with its
//! newline (how an optional fact, such as a model's knowledge cutoff, is left
//! out).

/// A variable binding: name (without braces) and value (`None` = drop the
/// lines that use it).
pub type Var<'a> = (&'a str, Option<&'a str>);

/// Render `template` with `vars` (see the module docs).
pub fn render(template: &str, vars: &[Var<'_>]) -> String {
    if !template.contains("{{") {
        return template.to_string();
    }
    let mut out = String::with_capacity(template.len() + 256);
    let mut first = true;
    for line in template.split('\n') {
        let Some(rendered) = render_line(line, vars) else { continue };
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(&rendered);
    }
    out
}

/// One line; `None` when a variable it uses is unset.
fn render_line(line: &str, vars: &[Var<'_>]) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let known = after.find("}}").and_then(|end| {
            let name = &after[..end];
            vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (end, *v))
        });
        match known {
            Some((_, None)) => return None,
            Some((end, Some(value))) => {
                out.push_str(value);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Whether `text` already contains `{{name}}` for one of `names` (an
/// extracted template would then be ambiguous).
pub fn mentions_any(text: &str, names: &[&str]) -> Option<String> {
    names.iter().map(|n| format!("{{{{{n}}}}}")).find(|pat| text.contains(pat.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_names_are_variables() {
        let t = "at {{cwd}} ({{memory name}})\n - cutoff: {{cutoff}}\nend {{cwd}}";
        assert_eq!(
            render(t, &[("cwd", Some("/x")), ("cutoff", Some("May"))]),
            "at /x ({{memory name}})\n - cutoff: May\nend /x"
        );
        assert_eq!(render(t, &[("cwd", Some("/x")), ("cutoff", None)]), "at /x ({{memory name}})\nend /x");
        assert_eq!(render("a {{b", &[("b", Some("x"))]), "a {{b");
        assert_eq!(render("", &[]), "");
        assert_eq!(mentions_any("x {{cwd}}", &["home", "cwd"]).as_deref(), Some("{{cwd}}"));
        assert_eq!(mentions_any("x {{memory name}}", &["cwd"]), None);
    }
}
