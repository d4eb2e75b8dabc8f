//! `recall serve`: Cognee's HTTP API until Ctrl-C or SIGTERM.

use recall::Settings;
use recall_core::Result;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Address to listen on [env: HTTP_API_HOST] [default: 127.0.0.1]
    #[arg(long)]
    host: Option<String>,
    /// Port to listen on [env: HTTP_API_PORT] [default: 8000]
    #[arg(long)]
    port: Option<u16>,
}

pub(crate) async fn run(settings: &Settings, args: Args) -> Result<()> {
    recall::serve::serve(settings, args.host.as_deref(), args.port).await
}
