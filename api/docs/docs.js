// The renderer of Grantry's /docs page: it reads openapi.json from the same server and shows
// every operation with its parameters, request body, responses and schemas, and can send a
// request with a credential typed into the page. It loads nothing from any other host, and it
// builds the page with DOM calls only, never by parsing HTML, so that no text of the document
// can become markup.
"use strict";

(function () {
  const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
  // Credentials typed into the page, by security scheme name. They live only in this variable.
  const tokens = {};
  let doc = null;

  // el makes an element with attributes and children (strings become text nodes).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // inline renders the little Markdown the document uses in one paragraph: `code` and **bold**.
  function inline(text) {
    const out = [];
    const re = /`([^`]+)`|\*\*([^*]+)\*\*/g;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) out.push(text.slice(last, m.index));
      out.push(m[1] !== undefined ? el("code", {}, m[1]) : el("strong", {}, m[2]));
      last = re.lastIndex;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  // prose renders a description: paragraphs separated by blank lines.
  function prose(text, cls) {
    if (!text) return null;
    return el("div", { class: "prose " + (cls || "") },
      text.split(/\n\s*\n/).map((p) => el("p", {}, inline(p.trim()))));
  }

  // resolve follows a local $ref such as #/components/schemas/User.
  function resolve(ref) {
    if (typeof ref !== "string" || !ref.startsWith("#/")) return undefined;
    let node = doc;
    for (const part of ref.slice(2).split("/")) {
      node = node && node[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    }
    return node;
  }

  function deref(node) {
    const seen = new Set();
    while (node && node.$ref && !seen.has(node.$ref)) {
      seen.add(node.$ref);
      node = resolve(node.$ref);
    }
    return node || {};
  }

  function refName(ref) {
    return ref.split("/").pop();
  }

  // typeLabel sums up a schema in one line: type, format and constraints.
  function typeLabel(s) {
    const parts = [];
    let t = s.type;
    if (Array.isArray(t)) t = t.join(" | ");
    if (t) parts.push(t);
    if (s.type === "array" && s.items) {
      const items = s.items.$ref ? refName(s.items.$ref) : typeLabel(s.items) || "any";
      parts[parts.length - 1] = "array of " + items;
    }
    if (s.format) parts.push("(" + s.format + ")");
    const limits = [];
    if (s.minLength !== undefined) limits.push("min length " + s.minLength);
    if (s.maxLength !== undefined) limits.push("max length " + s.maxLength);
    if (s.minItems !== undefined) limits.push("min items " + s.minItems);
    if (s.maxItems !== undefined) limits.push("max items " + s.maxItems);
    if (s.minimum !== undefined) limits.push("≥ " + s.minimum);
    if (s.maximum !== undefined) limits.push("≤ " + s.maximum);
    if (limits.length) parts.push("· " + limits.join(", "));
    return parts.join(" ");
  }

  // schemaView renders a schema as a tree: each property with its type, whether it is required,
  // its constraints and description; named schemas show their name and open on demand.
  function schemaView(schema, depth, trail) {
    depth = depth || 0;
    trail = trail || [];
    if (!schema) return el("span", { class: "muted" }, "any");
    if (schema.$ref) {
      const name = refName(schema.$ref);
      const target = resolve(schema.$ref);
      if (!target) return el("span", { class: "bad" }, "unresolved " + schema.$ref);
      if (trail.includes(schema.$ref)) return el("span", { class: "schema-name" }, name + " (see above)");
      const inner = schemaView(target, depth, trail.concat(schema.$ref));
      return el("details", { class: "schema-ref", open: depth < 2 },
        el("summary", {}, el("span", { class: "schema-name" }, name), " ", el("span", { class: "muted" }, typeLabel(target))),
        inner);
    }
    const box = el("div", { class: "schema" });
    const head = [];
    if (schema.description && depth === 0) head.push(prose(schema.description, "muted"));
    for (const key of ["anyOf", "oneOf", "allOf"]) {
      if (Array.isArray(schema[key])) {
        const word = { anyOf: "any of", oneOf: "one of", allOf: "all of" }[key];
        box.append(el("div", { class: "muted" }, word + ":"),
          el("ul", { class: "alts" }, schema[key].map((alt) => el("li", {}, schemaView(alt, depth + 1, trail)))));
      }
    }
    if (schema.enum) head.push(el("div", {}, "one of: ", schema.enum.map((v, i) => [i ? ", " : "", el("code", {}, JSON.stringify(v))])));
    if (schema.const !== undefined) head.push(el("div", {}, "always ", el("code", {}, JSON.stringify(schema.const))));
    if (schema.default !== undefined) head.push(el("div", { class: "muted" }, "default ", el("code", {}, JSON.stringify(schema.default))));
    box.prepend(...head.filter(Boolean));
    if (schema.properties) {
      const required = new Set(schema.required || []);
      const rows = Object.entries(schema.properties).map(([name, prop]) => {
        const p = deref(prop);
        const nested = prop.$ref || p.properties || (p.items && (p.items.$ref || deref(p.items).properties)) || p.anyOf || p.oneOf;
        return el("tr", {},
          el("td", { class: "prop" }, el("code", {}, name), required.has(name) ? el("span", { class: "req", title: "required" }, " *") : null),
          el("td", {},
            el("span", { class: "type" }, prop.$ref ? refName(prop.$ref) : typeLabel(p)),
            p.description ? prose(p.description, "muted") : null,
            p.enum ? el("div", {}, "one of: ", p.enum.map((v, i) => [i ? ", " : "", el("code", {}, JSON.stringify(v))])) : null,
            p.const !== undefined ? el("div", {}, "always ", el("code", {}, JSON.stringify(p.const))) : null,
            // The row shows the description already; the nested view only adds the structure.
            nested && depth < 6 ? schemaView(prop.$ref ? prop : (p.items && !p.properties ? p.items : { ...p, description: undefined }), depth + 1, trail) : null));
      });
      box.append(el("table", { class: "props" }, el("tbody", {}, rows)));
    } else if (schema.type === "array" && schema.items) {
      box.append(el("div", { class: "type" }, typeLabel(schema)));
      if (schema.items.$ref || schema.items.properties) box.append(schemaView(schema.items, depth + 1, trail));
    } else if (!schema.anyOf && !schema.oneOf && !schema.allOf) {
      box.append(el("div", { class: "type" }, typeLabel(schema) || "any JSON value"));
    }
    if (schema.description && depth > 0 && !schema.properties) box.append(prose(schema.description, "muted"));
    return box;
  }

  function methodBadge(method) {
    return el("span", { class: "method m-" + method }, method.toUpperCase());
  }

  function securityOf(op) {
    return op.security !== undefined ? op.security : doc.security || [];
  }

  // schemeOf is the name of the first security scheme an operation accepts, or "" for none.
  function schemeOf(op) {
    const sec = securityOf(op);
    return sec.length ? Object.keys(sec[0])[0] || "" : "";
  }

  function paramsOf(pathItem, op) {
    const byKey = new Map();
    for (const p of (pathItem.parameters || []).concat(op.parameters || [])) {
      const d = deref(p);
      byKey.set(d.in + ":" + d.name, d);
    }
    return [...byKey.values()];
  }

  function paramsTable(params) {
    return el("table", { class: "params" },
      el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "In"), el("th", {}, "Type"), el("th", {}, "Description"))),
      el("tbody", {}, params.map((p) => el("tr", {},
        el("td", {}, el("code", {}, p.name), p.required ? el("span", { class: "req", title: "required" }, " *") : null),
        el("td", {}, p.in),
        el("td", {}, typeLabel(deref(p.schema || {})),
          (deref(p.schema || {}).enum || []).length ? el("div", { class: "muted" }, "one of " + deref(p.schema).enum.join(", ")) : null),
        el("td", {}, prose(p.description || ""))))));
  }

  function contentView(content) {
    return Object.entries(content || {}).map(([media, m]) => el("div", { class: "media" },
      el("div", { class: "media-type" }, media),
      m.schema ? schemaView(m.schema) : null,
      m.example !== undefined ? el("details", { class: "example" }, el("summary", {}, "Example"),
        el("pre", {}, typeof m.example === "string" ? m.example : JSON.stringify(m.example, null, 2))) : null));
  }

  function responsesView(responses) {
    return Object.entries(responses || {}).map(([code, r]) => {
      const resp = deref(r);
      const headers = Object.entries(resp.headers || {}).map(([name, h]) => {
        const hd = deref(h);
        return el("li", {}, el("code", {}, name), hd.required ? "" : " (sometimes)", hd.description ? [" — ", inline(hd.description)] : null);
      });
      return el("details", { class: "response", open: code.startsWith("2") },
        el("summary", {}, el("span", { class: "status s" + code[0] }, code), " ", inline(resp.description || "")),
        headers.length ? el("div", { class: "headers" }, el("span", { class: "muted" }, "Headers"), el("ul", {}, headers)) : null,
        contentView(resp.content));
    });
  }

  // tryIt is the form that sends the operation's request to this Grantry.
  function tryIt(path, method, pathItem, op) {
    const params = paramsOf(pathItem, op);
    const inputs = params.map((p) => {
      const s = deref(p.schema || {});
      const input = el("input", { type: "text", name: p.name, placeholder: s.default !== undefined ? String(s.default) : (s.examples || [])[0] || "" });
      return { p, input, row: el("label", { class: "field" }, el("span", {}, p.in + " ", el("code", {}, p.name), p.required ? " *" : ""), input) };
    });
    let bodyInput = null;
    let mediaType = null;
    if (op.requestBody) {
      const rb = deref(op.requestBody);
      mediaType = Object.keys(rb.content || {})[0];
      const m = (rb.content || {})[mediaType] || {};
      bodyInput = el("textarea", { rows: 6, spellcheck: "false", "aria-label": "Request body" });
      bodyInput.value = m.example !== undefined ? JSON.stringify(m.example, null, 2) : "";
    }
    const scheme = schemeOf(op);
    const out = el("div", { class: "result", "aria-live": "polite" });
    const send = async () => {
      let url = path;
      const query = new URLSearchParams();
      const headers = { Accept: "application/json" };
      for (const { p, input } of inputs) {
        const v = input.value;
        if (p.in === "path") url = url.replace("{" + p.name + "}", encodeURIComponent(v));
        else if (v !== "" && p.in === "query") query.append(p.name, v);
        else if (v !== "" && p.in === "header") headers[p.name] = v;
      }
      if (scheme && tokens[scheme]) headers.Authorization = "Bearer " + tokens[scheme];
      const init = { method: method.toUpperCase(), headers, credentials: "omit", redirect: "manual" };
      if (bodyInput) {
        headers["Content-Type"] = mediaType;
        init.body = bodyInput.value;
      }
      const qs = query.toString();
      // Relative to the page, so that Grantry behind a path prefix is still reached.
      const target = new URL("." + url + (qs ? "?" + qs : ""), document.baseURI);
      out.replaceChildren(el("span", { class: "muted" }, "Sending " + init.method + " " + target.pathname + target.search + " …"));
      try {
        const started = performance.now();
        const res = await fetch(target, init);
        const text = await res.text();
        let shown = text;
        try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON: show as is */ }
        const ms = Math.round(performance.now() - started);
        out.replaceChildren(
          el("div", {}, el("span", { class: "status s" + String(res.status)[0] }, String(res.status)), " " + res.statusText + " · " + ms + " ms"),
          el("div", { class: "muted" }, "X-Request-ID: " + (res.headers.get("X-Request-ID") || "—") + " · Content-Type: " + (res.headers.get("Content-Type") || "—")),
          el("pre", {}, shown));
      } catch (e) {
        out.replaceChildren(el("span", { class: "bad" }, "The request failed: " + e.message));
      }
    };
    return el("details", { class: "try" },
      el("summary", {}, "Send a request"),
      scheme ? el("p", { class: "muted" }, "Uses the ", el("code", {}, scheme), " credential from the top of the page.") : el("p", { class: "muted" }, "Needs no credential."),
      inputs.map((i) => i.row),
      bodyInput ? el("label", { class: "field body" }, el("span", {}, "Body (" + mediaType + ")"), bodyInput) : null,
      el("button", { type: "button", onclick: send }, "Send"),
      out);
  }

  function operationView(path, method, pathItem, op) {
    const scheme = schemeOf(op);
    const params = paramsOf(pathItem, op);
    const id = "op-" + (op.operationId || method + path);
    return el("details", { class: "op", id, "data-search": [method, path, op.summary, (op.tags || []).join(" "), op.operationId].join(" ").toLowerCase() },
      el("summary", {}, methodBadge(method), " ", el("code", { class: "path" }, path), " ", el("span", { class: "summary" }, op.summary || ""),
        op.deprecated ? el("span", { class: "bad" }, " deprecated") : null),
      el("div", { class: "op-body" },
        el("div", { class: "meta" },
          "operationId ", el("code", {}, op.operationId || "—"), " · ",
          scheme ? ["credential ", el("code", {}, scheme)] : "no credential",
          op["x-also-served-at"] ? [" · also at ", el("code", {}, op["x-also-served-at"])] : null),
        prose(op.description),
        params.length ? [el("h4", {}, "Parameters"), paramsTable(params)] : null,
        op.requestBody ? [el("h4", {}, "Request body", deref(op.requestBody).required ? el("span", { class: "req" }, " *") : null),
          prose(deref(op.requestBody).description), contentView(deref(op.requestBody).content)] : null,
        el("h4", {}, "Responses"),
        responsesView(op.responses),
        tryIt(path, method, pathItem, op)));
  }

  function render() {
    const info = doc.info || {};
    document.title = (info.title || "API") + " " + (info.version || "");
    document.getElementById("title").replaceChildren(info.title || "API", " ", el("span", { class: "version" }, info.version || ""),
      " ", el("span", { class: "version" }, "OpenAPI " + doc.openapi));
    document.getElementById("loading").replaceChildren(
      info.summary || "", " ", el("a", { href: "openapi.json" }, "openapi.json"));
    document.getElementById("intro").replaceChildren(prose(info.description));

    const schemes = (doc.components || {}).securitySchemes || {};
    if (Object.keys(schemes).length) {
      document.getElementById("credentials").hidden = false;
      document.getElementById("schemes").replaceChildren(...Object.entries(schemes).map(([name, sch]) => {
        const input = el("input", { type: "password", autocomplete: "off", spellcheck: "false", placeholder: "token",
          oninput: (e) => { tokens[name] = e.target.value.trim(); } });
        return el("label", { class: "field" }, el("span", {}, el("code", {}, name), " ", inline(sch.description || sch.scheme || "")), input);
      }));
    }

    const byTag = new Map((doc.tags || []).map((t) => [t.name, []]));
    for (const [path, item] of Object.entries(doc.paths || {})) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const tag = (op.tags || ["Other"])[0];
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag).push({ path, method, item, op });
      }
    }
    const toc = [];
    const sections = [];
    for (const [tag, ops] of byTag) {
      if (!ops.length) continue;
      const tagInfo = (doc.tags || []).find((t) => t.name === tag) || {};
      toc.push(el("div", { class: "toc-tag" }, el("div", { class: "toc-title" }, tag),
        el("ul", {}, ops.map(({ path, method, op }) => el("li", { "data-for": "op-" + (op.operationId || method + path) },
          el("a", { href: "#op-" + (op.operationId || method + path) }, methodBadge(method), el("span", {}, path)))))));
      sections.push(el("section", { class: "tag" }, el("h2", {}, tag), prose(tagInfo.description),
        ops.map(({ path, method, item, op }) => operationView(path, method, item, op))));
    }
    document.getElementById("toc").replaceChildren(...toc);
    document.getElementById("operations").replaceChildren(...sections);

    document.getElementById("filter").addEventListener("input", (e) => {
      const q = e.target.value.trim().toLowerCase();
      for (const op of document.querySelectorAll("details.op")) {
        const hide = q !== "" && !op.dataset.search.includes(q);
        op.hidden = hide;
        const li = document.querySelector('li[data-for="' + op.id + '"]');
        if (li) li.hidden = hide;
      }
    });
    openFromHash();
  }

  function openFromHash() {
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target && target.tagName === "DETAILS") {
      target.open = true;
      target.scrollIntoView();
    }
  }

  window.addEventListener("hashchange", openFromHash);

  fetch(new URL("openapi.json", document.baseURI), { headers: { Accept: "application/json" }, credentials: "omit" })
    .then((res) => {
      if (!res.ok) throw new Error("openapi.json answered " + res.status);
      return res.json();
    })
    .then((d) => { doc = d; render(); })
    .catch((e) => {
      document.getElementById("loading").replaceChildren(el("span", { class: "bad" }, "Could not load openapi.json: " + e.message));
    });
})();
