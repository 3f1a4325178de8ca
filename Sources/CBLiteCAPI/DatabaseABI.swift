import CBLiteCore
import CCBLite

@c @implementation public func cbl_default_directory(_ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_path", empty: nil, err) { cString(try DatabaseName.defaultDirectory()) }
}

@c @implementation public func cbl_db_open(_ name: UnsafePointer<CChar>?, _ dir: UnsafePointer<CChar>?, _ options: UnsafePointer<CChar>?,
                                           _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_db", empty: nil, err) {
        let db = try Database.open(name: try string(name, "name"), directory: try optionalString(dir, "dir"),
                                   options: try OpenOptions(json: try optionalString(options, "options_json")))
        return HandleTable.shared.register(db)
    }
}

@c @implementation public func cbl_db_close(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        try database(db).close()
        HandleTable.shared.remove(db)
    }
}

/// The handle is released once the engine has closed it, also when removing the files
/// then fails (500): a closed handle left in the table could never be released.
@c @implementation public func cbl_db_delete(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let d = try database(db)
        defer { if d.isClosed { HandleTable.shared.remove(db) } }
        try d.delete()
    }
}

@c @implementation public func cbl_db_delete_named(_ name: UnsafePointer<CChar>?, _ dir: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try Database.delete(name: try string(name, "name"), directory: try optionalString(dir, "dir")) }
}

/// The engine's name rule and default directory first (Database.exists answers false for
/// both failures), then its file check.
@c @implementation public func cbl_db_exists_v2(_ name: UnsafePointer<CChar>?, _ dir: UnsafePointer<CChar>?,
                                                _ out: UnsafeMutablePointer<Int32>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_exists", empty: 0, err) {
        try Database.exists(name: try string(name, "name"), directory: try optionalString(dir, "dir")) ? 1 : 0
    }
}

/// Deprecated form of cbl_db_exists_v2: every error reads as "does not exist".
@c @implementation public func cbl_db_exists(_ name: UnsafePointer<CChar>?, _ dir: UnsafePointer<CChar>?) -> Int32 {
    let exists = try? Database.exists(name: string(name, "name"), directory: optionalString(dir, "dir"))
    return exists == true ? 1 : 0
}

@c @implementation public func cbl_db_list(_ dir: UnsafePointer<CChar>?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) { cString(try Database.list(directory: try optionalString(dir, "dir")).jsonArrayString) }
}

@c @implementation public func cbl_db_copy(_ source: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?, _ dir: UnsafePointer<CChar>?,
                                           _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        try Database.copy(from: try string(source, "source_path"), name: try string(name, "name"),
                          directory: try optionalString(dir, "dir"))
    }
}

@c @implementation public func cbl_db_name(_ db: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_name", empty: nil, err) {
        let d = try database(db)
        try d.checkOpen()
        return cString(d.name)
    }
}

@c @implementation public func cbl_db_path(_ db: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_path", empty: nil, err) {
        let d = try database(db)
        try d.checkOpen()
        return cString(d.path)
    }
}

@c @implementation public func cbl_db_count(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_count", empty: 0, err) { UInt64(try database(db).defaultCollection().count) }
}

@c @implementation public func cbl_db_last_sequence(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_sequence", empty: 0, err) { UInt64(try database(db).defaultCollection().lastSequence) }
}

@c @implementation public func cbl_db_max_rev_tree_depth(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_depth", empty: 0, err) { UInt32(try database(db).maxRevTreeDepth) }
}

@c @implementation public func cbl_db_set_max_rev_tree_depth(_ db: OpaquePointer?, _ depth: UInt32, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).setMaxRevTreeDepth(Int(depth)) }
}

@c @implementation public func cbl_db_security(_ db: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) { cString(try database(db).securityObject?.jsonText ?? "null") }
}

@c @implementation public func cbl_db_set_security(_ db: OpaquePointer?, _ json: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let d = try database(db)
        try d.setSecurityObject(try SecurityObject(json: try string(json, "json")))
    }
}

@c @implementation public func cbl_db_begin(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).begin() }
}

@c @implementation public func cbl_db_commit(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).commit() }
}

@c @implementation public func cbl_db_abort(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).abort() }
}

@c @implementation public func cbl_db_in_transaction(_ db: OpaquePointer?, _ body: cbl_transaction_fn?, _ context: UnsafeMutableRawPointer?,
                                                     _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        guard let body else { throw CBLError(.badRequest, "body is NULL") }
        try database(db).inTransaction { body(context) != 0 }
    }
}

@c @implementation public func cbl_db_compact(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).compact() }
}

@c @implementation public func cbl_db_optimize(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).optimize() }
}

@c @implementation public func cbl_db_integrity_check(_ db: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    out?.pointee = nil
    return abiCall(err) {
        let (problems, error) = try database(db).integrityReport()
        if error == nil || !problems.isEmpty { out?.pointee = cString(problems.jsonArrayString) }
        if let error { throw error }
    }
}

// MARK: notifications

@c @implementation public func cbl_db_buffer_notifications(_ db: OpaquePointer?, _ enabled: Int32, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).setNotificationsBuffered(enabled != 0) }
}

@c @implementation public func cbl_db_send_notifications(_ db: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).sendNotifications() }
}

@c @implementation public func cbl_db_wait_notifications(_ db: OpaquePointer?, _ timeout: UInt32, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).waitForNotifications(timeoutMs: Int(timeout)) }
}

// MARK: encryption

@c @implementation public func cbl_db_change_encryption_key(_ db: OpaquePointer?, _ keyJSON: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let d = try database(db)
        let key = try optionalString(keyJSON, "key_json").map { try EncryptionKey(jsonText: $0) }
        try d.changeEncryptionKey(key)
    }
}

@c @implementation public func cbl_db_is_encrypted_v2(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?,
                                                      _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_encrypted", empty: 0, err) {
        let d = try database(db)
        try d.checkOpen()
        return d.isEncrypted ? 1 : 0
    }
}

/// Deprecated form of cbl_db_is_encrypted_v2: every error reads as "not encrypted".
@c @implementation public func cbl_db_is_encrypted(_ db: OpaquePointer?) -> Int32 {
    guard let d = try? database(db), !d.isClosed else { return 0 }
    return d.isEncrypted ? 1 : 0
}
