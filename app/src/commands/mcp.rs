//! `recall mcp`: the MCP tools over standard input and output, for the
//! user of `--user`, until the client disconnects.

use recall_core::Result;

use super::Who;

pub(crate) async fn run(who: Who<'_>) -> Result<()> {
    let (app, user) = who.writer().await?;
    let mcp = recall_mcp::RecallMcp::new(app, user, recall::mcp_config(who.settings)?);
    mcp.serve_stdio(recall_mcp::STDIO_DRAIN).await
}
