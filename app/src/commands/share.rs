//! `recall share` and `recall unshare`: a permission on a dataset, given
//! to or taken from another user.

use recall_api::GrantRequest;
use recall_core::{Permission, RecallError, Result};

use super::{Target, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: Target,
    /// The user's email.
    #[arg(long = "with", value_name = "EMAIL")]
    with: String,
    /// read, write, delete or share.
    #[arg(long)]
    permission: String,
}

pub(crate) async fn run(who: Who<'_>, args: Args, grant: bool) -> Result<()> {
    let permission: Permission = args.permission.trim().parse()?;
    recall::validate_email(args.with.trim())?;
    let target = args.target.get();
    let (app, user) = who.reader_of(&target).await?;
    let grantee = app.user_by_email(args.with.trim()).await?.ok_or_else(|| {
        RecallError::NotFound(format!(
            "User '{}' not found. A user exists after its first write (recall --user {} remember …).",
            args.with.trim(),
            args.with.trim()
        ))
    })?;
    let request = GrantRequest { datasets: vec![target], grantee: grantee.clone(), permission, give: grant };
    let dataset =
        app.grant(&user, request).await?.pop().ok_or_else(|| RecallError::backend_msg("no dataset changed"))?;
    let verb = if grant { "Granted" } else { "Revoked" };
    let prep = if grant { "to" } else { "from" };
    println!("{verb} {permission} on dataset '{}' ({}) {prep} {}.", dataset.name, dataset.id, grantee.email);
    Ok(())
}
