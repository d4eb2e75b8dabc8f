//! `recall graph`: a dataset's graph as JSON or Graphviz DOT, streamed.

use recall_core::{RecallError, Result};

use super::{Target, Who};

#[derive(Clone, Copy, clap::ValueEnum)]
enum GraphFormat {
    Json,
    Dot,
}

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: Target,
    #[arg(long, value_enum, default_value = "json")]
    format: GraphFormat,
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let target = args.target.get();
    let (app, user) = who.reader_of(&target).await?;
    let shape = match args.format {
        GraphFormat::Json => recall_api::GraphShape::Json,
        GraphFormat::Dot => recall_api::GraphShape::Dot,
    };
    write_graph(app.export_graph(&user, &target, shape).await?).await
}

/// Streams an export to stdout a page at a time. A reader that closes the
/// pipe early (`recall graph | head`) ends it quietly.
async fn write_graph(mut export: recall_api::GraphExport) -> Result<()> {
    use std::io::Write;
    fn quiet_pipe(e: std::io::Error) -> Result<()> {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Ok(())
        } else {
            Err(RecallError::backend(e))
        }
    }
    let mut out = std::io::BufWriter::new(std::io::stdout());
    while let Some(piece) = export.next_piece().await? {
        if let Err(e) = out.write_all(piece.as_bytes()) {
            return quiet_pipe(e);
        }
    }
    out.flush().or_else(quiet_pipe)
}
