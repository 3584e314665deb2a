// A reply's markdown, drawn safely: the text is never parsed as HTML —
// every piece becomes a text node of an element made here (escaped by
// construction) — and only a small subset is read: headings, lists,
// fenced code blocks, inline code, bold, and links whose address is
// http(s) (any other address stays text).

import { el } from "./core.js";

const INLINE = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\[([^\]\n]+)\]\(([^)\s]+)\)/g;

// The inline pieces of one line: code, bold, links; the rest as text.
function inline(text) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) out.push(text.slice(at, m.index));
    if (m[1] !== undefined) out.push(el("code", {}, m[1]));
    else if (m[2] !== undefined) out.push(el("strong", {}, m[2]));
    else if (/^https?:\/\//i.test(m[4])) out.push(el("a", { href: m[4], target: "_blank", rel: "noopener noreferrer" }, m[3]));
    else out.push(m[0]);
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

const FENCE = /^\s*```/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;

// `text` as a fragment of elements.
export function markdown(text) {
  const lines = String(text ?? "").split("\n");
  const out = document.createDocumentFragment();
  let para = null, list = null;
  const end = () => { para = null; list = null; };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if (FENCE.test(line)) {
      const code = [];
      for (i++; i < lines.length && !FENCE.test(lines[i]); i++) code.push(lines[i]);
      out.append(el("pre", { class: "code" }, el("code", {}, code.join("\n"))));
      end();
    } else if ((m = HEADING.exec(line))) {
      out.append(el(`h${m[1].length}`, {}, ...inline(m[2])));
      end();
    } else if ((m = BULLET.exec(line)) || (m = NUMBERED.exec(line))) {
      const kind = BULLET.test(line) ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== kind) { list = el(kind); out.append(list); }
      list.append(el("li", {}, ...inline(m[1])));
      para = null;
    } else if (!line.trim()) {
      end();
    } else {
      if (!para) { para = el("p"); out.append(para); } else para.append(el("br"));
      para.append(...inline(line));
      list = null;
    }
  }
  return out;
}
