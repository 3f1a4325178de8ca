import CBLiteCore

/// The user a request's writes are made by, as a `validate_doc_update` sees them: the
/// request's userCtx with its database's URL name as `db`, and that database's
/// `_security` (its stored object, else the configured default), read only if a function
/// runs. Server endpoints (`_replicate`, …) write as the engine's local user.
extension Router {
    func writingAs<R>(_ req: Request, _ body: () throws -> R) rethrows -> R {
        guard let first = req.path.segments.first, !first.hasPrefix("_") || first == ReplicatorDatabase.name else {
            return try body()
        }
        let ctx = req.userCtx
        let user = WriteUser(name: ctx.name, roles: ctx.roles, db: first,
                             security: { [self] in try securityObject(first).json })
        return try WriteUser.$current.withValue(user, operation: body)
    }
}
