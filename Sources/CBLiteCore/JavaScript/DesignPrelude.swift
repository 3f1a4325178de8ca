/// The JavaScript every design-document context starts with: CouchDB's helpers for map
/// and reduce functions (emit, log, sum, toJSON, isArray, require of the design
/// document's CommonJS modules) and the entry points cblite calls (__cbl_*). Functions
/// are compiled once per context, from the design document given to __cbl_init.
enum DesignPrelude {
    static let source = #"""
    var __cbl_ddoc = null, __cbl_rows = null, __cbl_functions = {}, __cbl_modules = {};

    function emit(key, value) {
      if (__cbl_rows === null) throw new Error('emit() outside a map function');
      __cbl_rows.push([key === undefined ? null : key, value === undefined ? null : value]);
    }
    function log(message) {
      __cbl_log(typeof message === 'string' ? message : JSON.stringify(message));
    }
    function sum(values) {
      var total = 0;
      for (var i = 0; i < values.length; i++) total += values[i];
      return total;
    }
    function toJSON(value) { return JSON.stringify(value); }
    function isArray(value) { return Array.isArray(value); }

    // CouchDB's require: a path from the root given ('views/lib/x'), or relative to the
    // requiring module ('./x', '../x'); modules are strings of the design document,
    // compiled once per root.
    function __cbl_require_in(root, rootName) {
      var cache = __cbl_modules[rootName] || (__cbl_modules[rootName] = {});
      function resolve(name, parent) {
        var parts = (name.charAt(0) === '.' && parent) ? parent.slice(0, -1) : [];
        var names = name.split('/');
        for (var i = 0; i < names.length; i++) {
          if (names[i] === '..') {
            if (parts.length === 0) throw {error: 'invalid_require_path', reason: 'Object has no parent: ' + name};
            parts.pop();
          } else if (names[i] !== '.' && names[i] !== '') parts.push(names[i]);
        }
        return parts;
      }
      function load(name, parent) {
        var parts = resolve(name, parent), id = parts.join('/');
        if (Object.prototype.hasOwnProperty.call(cache, id)) return cache[id].exports;
        var source = root;
        for (var i = 0; i < parts.length; i++) {
          if (source === null || typeof source !== 'object' || !Object.prototype.hasOwnProperty.call(source, parts[i]))
            throw {error: 'invalid_require_path', reason: 'Object has no property "' + parts[i] + '". ' + id};
          source = source[parts[i]];
        }
        if (typeof source !== 'string')
          throw {error: 'invalid_require_path', reason: 'Path does not resolve to a string: ' + id};
        var module = {id: id, exports: {}};
        cache[id] = module;
        try {
          var body = (0, eval)('(function (module, exports, require) {' + source + '\n})');
          body(module, module.exports, function (n) { return load(n, parts); });
        } catch (e) {
          delete cache[id];
          throw e;
        }
        return module.exports;
      }
      return function require(name) { return load(name, null); };
    }

    function __cbl_init(ddoc) {
      __cbl_ddoc = ddoc;
      var views = ddoc.views || {};
      // Map functions see only views.lib, as in CouchDB.
      __cbl_view_require = __cbl_require_in({views: {lib: views.lib}}, 'views');
      __cbl_doc_require = __cbl_require_in(ddoc, 'ddoc');
      return null;
    }
    var __cbl_view_require = null, __cbl_doc_require = null, require = undefined;

    // The function at a path of the design document ('views.v.map'), compiled once.
    function __cbl_function(path) {
      var fn = __cbl_functions[path];
      if (fn) return fn;
      var source = __cbl_ddoc, parts = path.split('\u0000');
      for (var i = 0; i < parts.length; i++) source = source == null ? undefined : source[parts[i]];
      if (typeof source !== 'string') throw new TypeError(parts.join('.') + ' is not a function\'s source');
      fn = (0, eval)('(' + source + ')');
      if (typeof fn !== 'function') throw new TypeError(parts.join('.') + ' does not evaluate to a function');
      return (__cbl_functions[path] = fn);
    }

    // Each view's map, found without building its path on every call.
    var __cbl_maps = Object.create(null);
    function __cbl_map(view, doc) {
      var fn = __cbl_maps[view] || (__cbl_maps[view] = __cbl_function('views\u0000' + view + '\u0000map'));
      require = __cbl_view_require;
      __cbl_rows = [];
      try {
        fn(doc);
        return __cbl_rows;
      } finally {
        __cbl_rows = null;
      }
    }

    function __cbl_filter(name, doc, req) {
      var fn = __cbl_function('filters\u0000' + name);
      require = __cbl_doc_require;
      return fn(doc, req) === true;
    }

    // validate_doc_update as CouchDB's query server calls it (`this` is the design
    // document); what it throws reaches the engine as the failure's value.
    function __cbl_validate(newDoc, oldDoc, userCtx, secObj) {
      var fn = __cbl_function('validate_doc_update');
      require = __cbl_doc_require;
      fn.call(__cbl_ddoc, newDoc, oldDoc, userCtx, secObj);
      return null;
    }

    function __cbl_reduce(view, keys, values, rereduce) {
      var fn = __cbl_function('views\u0000' + view + '\u0000reduce');
      require = __cbl_view_require;
      var result = fn(keys, values, rereduce);
      return result === undefined ? null : result;
    }

    // A Nouveau index function (nouveau.NAME.index) on one document: the fields its
    // index(type, name, value, options) calls give, as [type, name, value, options] rows.
    var __cbl_fields = null;
    function index(type, name, value, options) {
      if (__cbl_fields === null) throw new Error('index() outside a nouveau index function');
      __cbl_fields.push([type, name, value === undefined ? null : value, options === undefined ? null : options]);
    }
    function __cbl_nouveau(name, doc) {
      var fn = __cbl_function('nouveau\u0000' + name + '\u0000index');
      require = __cbl_doc_require;
      __cbl_fields = [];
      try {
        fn(doc);
        return __cbl_fields;
      } finally {
        __cbl_fields = null;
      }
    }
    """#
}
