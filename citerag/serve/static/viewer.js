// The citerag viewer: streams an answer from /v1/chat/completions, turns its [N] into buttons,
// and shows a cited source's page (rendered by the server) with one box per highlight.
"use strict";

const $ = (id) => document.getElementById(id);
const CITATION = /\[(\d+)\]/g;
let sources = [];
let subQuestions = [];
let unsupportedNumbers = [];
let pageObjectUrl = null;

function headers(extra = {}) {
  const key = $("api-key").value.trim();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

function setState(state) { document.body.dataset.state = state; }

function showStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

async function errorSentence(response) {
  try {
    const body = await response.json();
    return body.error.message;
  } catch (_) {
    return `The server answered ${response.status}.`;
  }
}

async function apiFetch(url, options = {}) {
  const response = await fetch(url, { ...options, headers: headers(options.headers || {}) });
  if (!response.ok) {
    if (response.status === 401) $("api-key").focus();
    throw new Error(await errorSentence(response));
  }
  return response;
}

async function loadCollections() {
  try {
    const body = await (await apiFetch("/v1/models")).json();
    const select = $("collection");
    const previous = select.value || localStorage.getItem("citerag.collection");
    select.replaceChildren(...body.data.map((model) => new Option(model.id, model.id)));
    if (previous && body.data.some((m) => m.id === previous)) select.value = previous;
    if (!body.data.length) showStatus("No collections yet: upload a PDF through the API (/docs).");
  } catch (error) {
    showStatus(error.message, true);
  }
}

// Server-sent events from a fetch body: yields each `data:` payload.
async function* sseData(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6)).join("\n");
      if (data) yield data;
    }
  }
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  const collection = $("collection").value;
  if (!question || !collection) return;
  const mode = $("mode").value;
  localStorage.setItem("citerag.collection", collection);
  localStorage.setItem("citerag.mode", mode);
  resetAnswer();
  setState("streaming");
  $("ask").disabled = true;
  showStatus("Searching…");
  try {
    const response = await apiFetch("/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        model: collection, stream: true, mode, messages: [{ role: "user", content: question }],
      }),
    });
    let text = "";
    for await (const data of sseData(response)) {
      if (data === "[DONE]") break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      text += chunk.choices[0].delta.content || "";
      $("answer").textContent = text;
      if (chunk.sources) sources = chunk.sources;
      if (chunk.metadata) {
        subQuestions = chunk.metadata.subQuestions || [];
        unsupportedNumbers = chunk.metadata.unsupportedNumbers || [];
      }
    }
    renderAnswer(text);
    renderSubQuestions();
    renderSources();
    showStatus(`${sources.length} sources`);
    setState("answered");
  } catch (error) {
    showStatus(error.message, true);
    setState("error");
  } finally {
    $("ask").disabled = false;
  }
}

function resetAnswer() {
  sources = [];
  subQuestions = [];
  unsupportedNumbers = [];
  $("answer").textContent = "";
  $("sub-questions").replaceChildren();
  $("sub-questions-title").hidden = true;
  $("sources").replaceChildren();
  $("sources-title").hidden = true;
  $("page-pane").hidden = true;
}

function citeButton(number) {
  const button = document.createElement("button");
  button.className = "cite";
  button.type = "button";
  button.textContent = `[${number}]`;
  button.dataset.citation = String(number);
  button.addEventListener("click", () => openSource(number));
  return button;
}

function renderAnswer(text) {
  const answer = $("answer");
  answer.replaceChildren();
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    answer.append(...markUnsupported(text.slice(last, match.index)));
    answer.append(citeButton(Number(match[1])));
    last = match.index + match[0].length;
  }
  answer.append(...markUnsupported(text.slice(last)));
}

// Numbers that no cited source holds (metadata.unsupportedNumbers) are marked where they stand.
function markUnsupported(segment) {
  const parts = [];
  let rest = segment;
  for (;;) {
    const hits = unsupportedNumbers
      .map((item) => ({ item, at: rest.indexOf(item.number) }))
      .filter((hit) => hit.at >= 0)
      .sort((a, b) => a.at - b.at);
    if (!hits.length) break;
    const { item, at } = hits[0];
    parts.push(rest.slice(0, at));
    const mark = document.createElement("mark");
    mark.className = "unsupported";
    const cited = item.citations.map((n) => `[${n}]`).join("") || "any source";
    mark.title = `Not found in ${cited}: check this number`;
    mark.textContent = item.number;
    parts.push(mark);
    rest = rest.slice(at + item.number.length);
  }
  parts.push(rest);
  return parts;
}

// The plan behind the answer: each sub-question, the tool that answered it, its citations.
function renderSubQuestions() {
  $("sub-questions-title").hidden = subQuestions.length === 0;
  $("sub-questions").replaceChildren(...subQuestions.map((item) => {
    const entry = make("li", "sub-question");
    const tool = make("span", "tool", item.tool);
    const question = make("span", "question", item.question);
    entry.append(tool, question, ...(item.citations || []).map(citeButton));
    if (item.error) entry.append(make("span", "error", `failed: ${item.error}`));
    return entry;
  }));
}

function markedContent(source) {
  const fragment = document.createDocumentFragment();
  const spans = [...source.highlights].sort((a, b) => a.startOffset - b.startOffset);
  let cursor = 0;
  for (const span of spans) {
    if (span.startOffset < cursor) continue;
    fragment.append(source.content.slice(cursor, span.startOffset));
    const mark = document.createElement("mark");
    mark.textContent = source.content.slice(span.startOffset, span.endOffset);
    fragment.append(mark);
    cursor = span.endOffset;
  }
  fragment.append(source.content.slice(cursor));
  return fragment;
}

function renderSources() {
  $("sources-title").hidden = sources.length === 0;
  $("sources").replaceChildren(...sources.map((source) => {
    const card = make("li", "source-card");
    card.dataset.citation = String(source.citationNumber);
    const meta = make("div", "meta", `[${source.citationNumber}] ${source.documentName} · page ` +
      `${source.pageNumber}${source.title ? " · " + source.title : ""}`);
    const content = make("div", "content");
    content.append(markedContent(source));
    card.append(meta, content);
    requestAnimationFrame(() => scrollToFirstMark(content));
    card.addEventListener("click", () => openSource(source.citationNumber));
    return card;
  }));
}

function scrollToFirstMark(content) {
  const mark = content.querySelector("mark");
  if (mark) content.scrollTop = Math.max(0, mark.offsetTop - 8);
}

function documentUrl(source) {
  const collection = encodeURIComponent($("collection").value);
  const name = encodeURIComponent(source.documentName);
  return `/api/collections/${collection}/documents/${name}/pages/${source.pageNumber}`;
}

async function openSource(number) {
  const source = sources.find((s) => s.citationNumber === number);
  if (!source) return;
  setState("loading-page");
  markActive(number);
  $("page-pane").hidden = false;
  $("page-title").textContent = `[${number}] ${source.documentName} — page ${source.pageNumber}`;
  $("page-boxes").replaceChildren();
  try {
    const base = documentUrl(source);
    const [image, boxes] = await Promise.all([
      apiFetch(`${base}/image?zoom=1.5`).then((r) => r.blob()),
      apiFetch(`${base}/boxes`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ highlights: source.highlights.map((h) => h.text) }),
      }).then((r) => r.json()),
    ]);
    await showImage(image);
    drawBoxes(source, boxes);
    listHighlights(source);
    setState("page-ready");
  } catch (error) {
    showStatus(error.message, true);
    setState("error");
  }
}

function markActive(number) {
  for (const element of document.querySelectorAll(".cite, .source-card")) {
    element.classList.toggle("active", element.dataset.citation === String(number));
  }
}

function showImage(blob) {
  if (pageObjectUrl) URL.revokeObjectURL(pageObjectUrl);
  pageObjectUrl = URL.createObjectURL(blob);
  const image = $("page-image");
  return new Promise((resolve, reject) => {
    image.onload = () => resolve();
    image.onerror = () => reject(new Error("The page image could not be shown."));
    image.src = pageObjectUrl;
  });
}

// One box per highlight, placed in percent of the page so it follows the image's size; inside
// it, the highlight's own lines are shaded.
function drawBoxes(source, page) {
  const fallback = unionOf(source.boxes);
  const found = page.highlights.map((h) => ({
    box: h.box || fallback, rects: h.rects, exact: Boolean(h.box),
  }));
  const drawn = found.map(({ box, rects, exact }, index) => {
    if (!box) return null;
    const element = document.createElement("div");
    element.className = exact ? "highlight-box" : "highlight-box approximate";
    element.dataset.highlight = String(index);
    element.title = source.highlights[index].text;
    place(element, box, { x0: 0, y0: 0, x1: page.width, y1: page.height });
    for (const rect of exact ? rects : []) {
      const line = document.createElement("div");
      line.className = "highlight-line";
      place(line, rect, box);
      element.append(line);
    }
    return element;
  });
  $("page-boxes").replaceChildren(...drawn.filter(Boolean));
}

function place(element, box, within) {
  const width = within.x1 - within.x0;
  const height = within.y1 - within.y0;
  Object.assign(element.style, {
    left: `${((box.x0 - within.x0) / width) * 100}%`,
    top: `${((box.y0 - within.y0) / height) * 100}%`,
    width: `${((box.x1 - box.x0) / width) * 100}%`,
    height: `${((box.y1 - box.y0) / height) * 100}%`,
  });
}

function unionOf(boxes) {
  if (!boxes || !boxes.length) return null;
  return {
    x0: Math.min(...boxes.map((b) => b.x0)), y0: Math.min(...boxes.map((b) => b.y0)),
    x1: Math.max(...boxes.map((b) => b.x1)), y1: Math.max(...boxes.map((b) => b.y1)),
  };
}

function listHighlights(source) {
  $("highlight-list").replaceChildren(...source.highlights.map((h) => listItem(h.text)));
  const others = sources.filter((s) => s !== source).flatMap((s) => s.highlights.map((h) => {
    const item = listItem(`[${s.citationNumber}] p. ${s.pageNumber}: ${h.text}`);
    item.addEventListener("click", () => openSource(s.citationNumber));
    return item;
  }));
  $("other-highlights").replaceChildren(...others);
}

function listItem(text) {
  return make("li", "", text);
}

// A new element with a class (none when empty) and, when given, its text.
function make(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

$("api-key").value = sessionStorage.getItem("citerag.key") || "";
$("api-key").addEventListener("change", () => {
  sessionStorage.setItem("citerag.key", $("api-key").value.trim());
  loadCollections();
});
$("mode").value = localStorage.getItem("citerag.mode") || "subquestions";
if (!$("mode").value) $("mode").value = "subquestions";
$("ask-form").addEventListener("submit", ask);
loadCollections();
