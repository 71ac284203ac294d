"""Documents: upload (checked, then ingested in the background), list, delete, and pages."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, File, Query, Response, UploadFile
from fastapi.responses import JSONResponse

from citerag.serve.api_errors import ApiError
from citerag.serve.schemas import BoxesRequest
from citerag.serve.security import multipart_file_name, safe_collection, safe_document_name
from citerag.serve.state import Served, State, require_key
from citerag.serve.uploads import check_upload
from citerag.tree.stored import find_tree

router = APIRouter(dependencies=[Depends(require_key)], tags=["documents"])
DOCUMENT = "/api/collections/{collection}/documents/{name}"


@router.post(
    "/api/collections/{collection}/documents",
    status_code=202,
    summary="Upload a PDF; it is checked now and ingested in the background",
)
async def upload(
    collection: str,
    file: Annotated[UploadFile, File(description="the PDF")],
    state: State,
) -> JSONResponse:
    """413 over the size cap, 415 when not a PDF, 422 when unreadable; nothing is kept then."""
    collection = safe_collection(collection)
    name = safe_document_name(multipart_file_name(file.filename or ""))
    cap = int(state.settings.server.max_upload_mb * 1_048_576)
    data = await file.read(cap + 1)
    check_upload(data, name, cap)
    job = await state.run(state.uploads.submit, data, name, collection)
    status_url = f"/api/uploads/{job.id}"
    body = {**job.to_dict(), "statusUrl": status_url}
    return JSONResponse(body, status_code=202, headers={"Location": status_url})


@router.get("/api/uploads/{job_id}", summary="An upload's ingest status and progress")
async def upload_status(job_id: str, state: State) -> Mapping[str, object]:
    return state.uploads.get(job_id).to_dict()


@router.get("/api/documents", summary="Documents per collection (as `main.py list --json`)")
async def list_documents(
    state: State, collection: Annotated[str | None, Query()] = None
) -> list[dict[str, object]]:
    names = None if collection is None else [safe_collection(collection)]
    return await state.run(_listing, state, names)


@router.get(
    "/api/documents/{name}/tree",
    summary="A document's section tree (PageIndex JSON, as `main.py tree --json`)",
)
async def document_tree(
    name: str,
    state: State,
    collection: Annotated[str, Query(description="the document's collection")] = "default",
) -> Mapping[str, object]:
    """`{"doc_name", "structure"}`: nested nodes with `title`, `node_id`, `start_index`,
    `end_index` (pages), `summary` and `nodes`. 404 when the document or its tree is absent."""
    collection, name = safe_collection(collection), safe_document_name(name)
    return await state.run(_tree, state, collection, name)


@router.delete(DOCUMENT, summary="Remove a document (every version of that name)")
async def delete_document(collection: str, name: str, state: State) -> Mapping[str, object]:
    collection, name = safe_collection(collection), safe_document_name(name)
    removed = await state.run(_delete, state, collection, name)
    return {"deleted": removed, "collection": collection, "name": name}


@router.get(
    DOCUMENT + "/pages/{page}/image",
    summary="A page rendered as PNG",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
)
async def page_image(
    collection: str,
    name: str,
    page: int,
    state: State,
    zoom: Annotated[float, Query(ge=0.5, le=4.0)] = 1.5,
) -> Response:
    path = await state.run(_pdf_path, state, collection, name)
    png = await state.run(state.pages.png, path, page, zoom)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=60"})


@router.post(DOCUMENT + "/pages/{page}/boxes", summary="Where highlight texts are on a page")
async def page_boxes(
    collection: str,
    name: str,
    page: int,
    body: BoxesRequest,
    state: State,
) -> Mapping[str, object]:
    """Page size in PDF points (origin top-left) and one box per highlight (null: not found)."""
    path = await state.run(_pdf_path, state, collection, name)
    return await state.run(state.pages.boxes, path, page, body.highlights)


def _listing(state: Served, names: list[str] | None) -> list[dict[str, object]]:
    for name in names or []:
        state.existing_collection(name)
    return [d.to_dict() for d in state.engine.list_documents(names)]


def _delete(state: Served, collection: str, name: str) -> int:
    state.existing_collection(collection)
    removed = state.engine.delete(name, collection)
    if not removed:
        raise ApiError(404, f"No document named {name!r} in collection {collection!r}.")
    state.pages.forget(collection, name)
    return removed


def _tree(state: Served, collection: str, name: str) -> Mapping[str, object]:
    record = state.ready_document(collection, name)
    tree = find_tree(state.engine.docstore, collection, record.doc_id)
    if tree is None:
        raise ApiError(
            404,
            f"Document {name!r} in collection {collection!r} has no section tree stored; "
            "ingest it again to build one.",
        )
    return tree.to_pageindex()


def _pdf_path(state: Served, collection: str, name: str) -> Path:
    collection, name = safe_collection(collection), safe_document_name(name)
    record = state.ready_document(collection, name)
    return state.pages.locate(collection, name, record.doc_id)
