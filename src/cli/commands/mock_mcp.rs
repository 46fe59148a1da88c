//! `ctxasm mock-mcp` (hidden): the stdio MCP server of captures and probes.

use crate::cli::args::MockMcpArgs;
use crate::cli::exit::Outcome;
use crate::cli::output;

pub fn run(args: &MockMcpArgs) -> anyhow::Result<Outcome> {
    if args.describe {
        output::json(&ctxasm::mock::mcp::describe())?;
        return Ok(Outcome::Clean);
    }
    ctxasm::mock::mcp::serve(std::io::stdin().lock(), std::io::stdout().lock())?;
    Ok(Outcome::Clean)
}
